export { buildTelemetryApp, type TelemetryDeps } from './app.ts';
export { finalizeSession, replayKey, type EndedSession, type FinalizeDeps } from './finalize.ts';
export {
  createSessionTokenVerifier,
  SESSION_TOKEN_ALG,
  SESSION_TOKEN_AUDIENCE,
  SESSION_TOKEN_ISSUER,
  type SessionClaims,
} from './tokens.ts';
export { MovementDefinition, movementProblems, type Movement } from './pose/movement.ts';
export { ALGORITHM_VERSION, type SessionScore, type Rep } from './pose/scoring.ts';
export { parseTelemetryConfig, type TelemetryConfig } from './config.ts';
