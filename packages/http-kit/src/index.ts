export { AppError, errors, errorBody, type ErrorBody } from './errors.ts';
export {
  installErrorHandling,
  toAppError,
  fieldsFromValidation,
  frameworkErrors,
  clientErrorHandler,
  edgeServerOptions,
} from './error-handler.ts';
export { createRateLimiter, enforceLimit, rateLimitHeaders, type RateLimiter, type RateDecision } from './rate-limit.ts';
export { createJwtVerifier, bearerToken, type TokenVerifier, type VerifiedToken } from './jwt.ts';
export { installValidators, lazySerializerOptions } from './validators.ts';
export { ErrorResponse, Uuid, DataOf, Timestamp, PositiveInt32, nullable } from './schemas.ts';
export {
  installIdempotency,
  createMemoryIdempotencyStore,
  createRedisIdempotencyStore,
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENCY_REPLAYED_HEADER,
  IDEMPOTENCY_KEY_PATTERN,
  type IdempotencyStore,
  type IdempotencyOptions,
  type MemoryIdempotencyStoreOptions,
  type RedisIdempotencyStoreOptions,
} from './idempotency.ts';
export {
  LIST_LIMITS,
  parsePagination,
  parseSort,
  parseFilters,
  parseDateRange,
  parsePicker,
  containsPattern,
  listEnvelope,
  pickerEnvelope,
  SqlWhere,
  PaginationSchema,
  ListQuery,
  ListQueryWith,
  SortParam,
  DateRangeQuery,
  PickerQuery,
  ListOf,
  PickerOf,
  type Pagination,
  type SortClause,
  type Sort,
  type DateRange,
  type Picker,
  type ListEnvelope,
  isUuid,
  isIsoDate,
} from './list.ts';
export { installTextGuard, findUnstorableText, isUnstorableText, UNSTORABLE_TEXT_REASON } from './text-guard.ts';
export { createServiceLogger, redactUrl, REDACTED_LOG_PATHS } from './logging.ts';
export { normalizeEmail, type EmailCheck } from './email.ts';
export { installApiDocs, installHealthRoute, type ApiDocsOptions } from './api-docs.ts';
