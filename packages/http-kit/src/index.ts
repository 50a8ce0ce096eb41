export { AppError, errors, errorBody, type ErrorBody } from './errors.ts';
export { installErrorHandling, toAppError, fieldsFromValidation } from './error-handler.ts';
export { createRateLimiter, rateLimitHeaders, type RateLimiter, type RateDecision } from './rate-limit.ts';
export { createJwtVerifier, bearerToken, type TokenVerifier, type VerifiedToken } from './jwt.ts';
export { installValidators } from './validators.ts';
export { ErrorResponse, Uuid, DataOf, Timestamp } from './schemas.ts';
