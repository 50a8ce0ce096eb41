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

/**
 * A foreign key refused the change: 23503 (no action: a missing referenced row, or a referenced row
 * removed) or 23001 (`on delete restrict`: the row is still referenced).
 */
export const isForeignKeyViolation = (err: unknown): boolean => ['23503', '23001'].includes(pgErrorCode(err) ?? '');
