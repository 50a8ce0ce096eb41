// The composer's public entry point: what other apps of the repository (the core API's worker and its
// embedded default) may use. Everything else in src/ is the composer's own.
export { buildComposerService, type ComposerService } from './app.ts';
export { AUTH_SCHEME, signRequest } from './auth.ts';
export { composerCompanion } from './companion.ts';
export { ComposerConfigError, composerConfigFromEnv, parseComposerConfig, type ComposerConfig } from './config.ts';
export { registerComposerJobs } from './jobs.ts';
export { missingTools, skipWithoutFfmpeg } from './ffmpeg.ts';
