/** SQLSTATE of a driver error (pg and PGlite both expose `code`). */
export function pgErrorCode(err: unknown): string | undefined {
  if (err && typeof err === 'object' && 'code' in err && typeof (err as { code: unknown }).code === 'string') {
    return (err as { code: string }).code;
  }
  return undefined;
}

export const isUniqueViolation = (err: unknown): boolean => pgErrorCode(err) === '23505';
/** new row violates row-level security policy (42501 insufficient_privilege covers both). */
export const isRlsViolation = (err: unknown): boolean => pgErrorCode(err) === '42501';
