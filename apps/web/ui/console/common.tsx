import { errorCode, isApiError, Notice, useI18n } from '@clinic/ui';
import type { ReactNode } from 'react';

/** The server's own message for a refused action (the console shows why, never a generic failure). */
export function ServerError({ error }: { error: unknown }) {
  const { t } = useI18n();
  if (!error) return null;
  return <Notice kind="error">{isApiError(error) ? error.message : t('app.error')}</Notice>;
}

export function PageHead({ title, lead, actions }: { title: string; lead?: string; actions?: ReactNode }) {
  return (
    <div className="console-head">
      <div>
        <h1>{title}</h1>
        {lead && <p className="muted">{lead}</p>}
      </div>
      {actions && <div className="button-row">{actions}</div>}
    </div>
  );
}

export type Tone = 'ok' | 'warn' | 'bad' | 'off';

export function StatusPill({ tone, children }: { tone: Tone; children: ReactNode }) {
  return (
    <span className={`pill pill-${tone}`}>
      <span className="pill-dot" aria-hidden="true" />
      {children}
    </span>
  );
}

export { errorCode };

/** The end of every console form: the server's refusal, then submit and cancel. */
export function FormActions({
  error,
  pending,
  submit,
  onCancel,
}: {
  error: unknown;
  pending: boolean;
  submit: string;
  onCancel: () => void;
}) {
  const { t } = useI18n();
  return (
    <>
      <ServerError error={error} />
      <div className="button-row">
        <button type="submit" className="button" disabled={pending}>
          {submit}
        </button>
        <button type="button" className="button button-secondary" onClick={onCancel}>
          {t('console.cancel')}
        </button>
      </div>
    </>
  );
}
