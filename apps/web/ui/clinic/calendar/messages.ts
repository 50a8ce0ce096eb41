import { errorCode, isApiError, type MessageKey } from '@clinic/ui';

const KNOWN = new Set(['slot_unavailable', 'invalid_transition', 'forbidden']);

/** A refusal in the member's language where the calendar knows the code, with the server's own reason after it. */
export function refusal(err: unknown, t: (key: MessageKey, vars?: Record<string, string | number>) => string): string {
  const code = errorCode(err);
  const server = isApiError(err) ? err.message : '';
  if (code && KNOWN.has(code)) return `${t(`cal.error.${code}` as MessageKey)} ${t('cal.error.server', { message: server })}`;
  return server ? t('cal.error.server', { message: server }) : t('app.error');
}
