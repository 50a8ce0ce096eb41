export { buildWebServer, type WebDeps, type WebServer } from './server/app.ts';
export { deriveSecret, parseWebConfig, WebConfigError, type OidcSettings, type WebConfig } from './server/config.ts';
export { frontEndBuildNeeded, buildFrontEnd, ensureFrontEndBuilt } from './build.ts';
