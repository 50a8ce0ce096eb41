/**
 * The one error type of the platform. Codes and statuses are those of spec section 7; `fields` is
 * present only on validation errors (spec 2.2).
 */
export class AppError extends Error {
  readonly statusCode: number;
  readonly code: string;
  readonly fields: Record<string, string> | undefined;
  readonly extra: Record<string, unknown> | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(
    statusCode: number,
    code: string,
    message: string,
    opts: { fields?: Record<string, string>; extra?: Record<string, unknown>; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.name = 'AppError';
    this.statusCode = statusCode;
    this.code = code;
    this.fields = opts.fields;
    this.extra = opts.extra;
    this.headers = opts.headers;
  }
}

export const errors = {
  unauthorized: (message = 'A valid bearer token is required: send Authorization: Bearer <token>.') =>
    new AppError(401, 'unauthorized', message),
  forbidden: (message = 'You do not have permission to do this.') => new AppError(403, 'forbidden', message),
  validation: (fields: Record<string, string>, message = 'The request body is invalid; see fields.') =>
    new AppError(400, 'validation_error', message, { fields }),
  queryValidation: (fields: Record<string, string>, message = 'The query is invalid; see fields.') =>
    new AppError(422, 'validation_failed', message, { fields }),
  invalidBody: (message = 'The request body is not valid JSON.') => new AppError(400, 'invalid_body', message),
  organizationNotFound: (message = 'The organization does not exist.') => new AppError(404, 'organization_not_found', message),
  notFound: (message = 'No matching record.') => new AppError(404, 'not_found', message),
  conflict: (code: string, message: string) => new AppError(409, code, message),
  rateLimited: (retryAfterSeconds: number) =>
    new AppError(429, 'rate_limited', `Too many requests; retry after ${retryAfterSeconds} seconds.`, {
      headers: { 'retry-after': String(retryAfterSeconds) },
    }),
  /** A request past its budget, or a database statement past its time-out (spec 8; docs/decisions.md). */
  timeout: (message = 'The request took longer than its time-out and was stopped; retry later, or narrow it.') =>
    new AppError(504, 'timeout', message),
  internal: () => new AppError(500, 'internal_error', 'An unexpected error occurred. It has been logged; retry later.'),
};

export interface ErrorBody {
  error: { code: string; message: string; fields?: Record<string, string> } & Record<string, unknown>;
}

export function errorBody(err: AppError): ErrorBody {
  return {
    error: {
      code: err.code,
      message: err.message,
      ...(err.fields ? { fields: err.fields } : {}),
      ...(err.extra ?? {}),
    },
  };
}
