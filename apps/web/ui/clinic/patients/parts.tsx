import { isApiError, Notice, useI18n } from '@clinic/ui';
import type { ScreenProps } from '../screen-props.ts';

/** What every section of the record gets: the screen's props and the record's id. */
export interface SectionProps extends ScreenProps {
  patientId: string;
}

/** A person's name as staff say it, or the email when the record has no name yet. */
export function fullName(p: { first_name: string | null; last_name: string | null; email?: string | null }): string {
  return [p.first_name, p.last_name].filter(Boolean).join(' ') || p.email || '—';
}

/** A refusal or failure: the server's own message when it sent one (a 403 names the missing code), else the generic one. */
export function ServerError({ error }: { error: unknown }) {
  const { t } = useI18n();
  return <Notice kind="error">{isApiError(error) ? error.message : t('app.error')}</Notice>;
}

/** An empty section: one calm sentence, never a blank panel. */
export function Empty({ children }: { children: string }) {
  return <p className="pr-empty muted">{children}</p>;
}

/** The zone a record's times are shown in: the browser's, named once in the header of the record. */
export const recordZone = (): string => Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
