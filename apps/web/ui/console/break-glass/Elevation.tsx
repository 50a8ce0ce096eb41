import { api, formatCountdown, idempotencyKey, isApiError, type MessageKey, useI18n } from '@clinic/ui';
import { useMutation } from '@tanstack/react-query';
import { type FormEvent, useEffect, useId, useState } from 'react';
import { ServerError } from '../common.tsx';
import { type OpenSession, rememberSession } from './session-store.ts';

/** The elevation form's metadata, as a console route's 403 break_glass_required (or 410) carries it (spec 4.7). */
export interface ElevationMeta {
  method: string;
  path: string;
  organization_id: string;
  scope: string;
  reason_categories: string[];
  fields: {
    reason_text: { required: boolean; min_length: number; max_length: number };
    reason_ref: { required: boolean; max_length: number };
    expires_in_minutes: { required: boolean; default: number; minimum: number; maximum: number };
  };
}

/** The refusal of a console read, when it is one that a break-glass session would lift. */
export function elevationOf(err: unknown): { meta: ElevationMeta; expired: boolean; message: string } | null {
  if (!isApiError(err) || (err.code !== 'break_glass_required' && err.code !== 'break_glass_expired')) return null;
  const meta = (err.body.error as { elevation?: ElevationMeta }).elevation;
  return meta ? { meta, expired: err.code === 'break_glass_expired', message: err.message } : null;
}

/** Drawn from the refusal's metadata: the scope and organization it names, its reason categories and limits. */
export function ElevationForm({
  meta,
  expired,
  message,
  orgName,
  onOpened,
}: {
  meta: ElevationMeta;
  expired: boolean;
  message: string;
  orgName: string;
  onOpened: (s: OpenSession) => void;
}) {
  const { t } = useI18n();
  const f = meta.fields;
  const [category, setCategory] = useState(meta.reason_categories[0] ?? '');
  const [reason, setReason] = useState('');
  const [ref, setRef] = useState('');
  const [minutes, setMinutes] = useState(String(f.expires_in_minutes.default));
  const [key] = useState(idempotencyKey);
  const ids = { cat: useId(), reason: useId(), ref: useId(), minutes: useId() };
  const open = useMutation({
    mutationFn: async () =>
      (
        await api.openBreakGlassSession({
          body: {
            organization_id: meta.organization_id,
            scope: meta.scope as 'patient_list',
            reason_category: category as 'support_ticket',
            reason_text: reason.trim(),
            ...(ref.trim() ? { reason_ref: ref.trim() } : {}),
            expires_in_minutes: Number(minutes),
          },
          headers: { 'idempotency-key': key },
        })
      ).data.data as unknown as OpenSession,
    onSuccess: (s) => {
      rememberSession(s);
      onOpened(s);
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    open.mutate();
  };
  const scopeLabel = t(`console.scope.${meta.scope}` as MessageKey);
  return (
    <form className="card elevation" onSubmit={submit} aria-labelledby="elevation-title">
      <div className="elevation-head">
        <span className="elevation-icon" aria-hidden="true">
          !
        </span>
        <div>
          <h2 id="elevation-title">{expired ? t('console.bg.expiredTitle') : t('console.bg.requiredTitle')}</h2>
          <p>{t('console.bg.requiredLead', { scope: scopeLabel, org: orgName })}</p>
          <p className="muted small">{message}</p>
        </div>
      </div>
      <dl className="facts">
        <div>
          <dt>{t('console.bg.scope')}</dt>
          <dd>{scopeLabel}</dd>
        </div>
        <div>
          <dt>{t('console.bg.organization')}</dt>
          <dd>{orgName}</dd>
        </div>
      </dl>
      <div className="form-grid">
        <div className="field">
          <label htmlFor={ids.cat}>{t('console.bg.category')}</label>
          <select id={ids.cat} value={category} onChange={(e) => setCategory(e.target.value)} required>
            {meta.reason_categories.map((c) => (
              <option key={c} value={c}>
                {t(`console.reason.${c}` as MessageKey)}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor={ids.ref}>{t('console.bg.reference')}</label>
          <input
            id={ids.ref}
            value={ref}
            maxLength={f.reason_ref.max_length}
            required={f.reason_ref.required}
            onChange={(e) => setRef(e.target.value)}
          />
        </div>
        <div className="field">
          <label htmlFor={ids.minutes}>{t('console.bg.minutes')}</label>
          <input
            id={ids.minutes}
            type="number"
            inputMode="numeric"
            min={f.expires_in_minutes.minimum}
            max={f.expires_in_minutes.maximum}
            value={minutes}
            required
            aria-describedby={`${ids.minutes}-hint`}
            onChange={(e) => setMinutes(e.target.value)}
          />
          <span className="muted small" id={`${ids.minutes}-hint`}>
            {t('console.bg.minutesHint', { max: f.expires_in_minutes.maximum })}
          </span>
        </div>
      </div>
      <div className="field">
        <label htmlFor={ids.reason}>{t('console.bg.reason')}</label>
        <textarea
          id={ids.reason}
          value={reason}
          minLength={f.reason_text.min_length}
          maxLength={f.reason_text.max_length}
          required={f.reason_text.required}
          aria-describedby={`${ids.reason}-hint`}
          onChange={(e) => setReason(e.target.value)}
        />
        <span className="muted small" id={`${ids.reason}-hint`}>
          {t('console.bg.reasonHint', { min: f.reason_text.min_length })}
        </span>
      </div>
      <ServerError error={open.error} />
      <div className="button-row">
        <button type="submit" className="button button-danger" disabled={open.isPending}>
          {t('console.bg.open')}
        </button>
        <span className="muted small">{t('console.bg.audited')}</span>
      </div>
    </form>
  );
}

/** The open session: a live countdown to its expiry (role timer), what it covers, and ending it now. */
export function SessionBar({ session, onExpired }: { session: OpenSession; onExpired: () => void }) {
  const { t } = useI18n();
  const end = useMutation({
    mutationFn: async () => (await api.endBreakGlassSession({ params: { id: session.id } })).data.data,
    onSuccess: () => onExpired(),
  });
  const left = () => Math.max(0, Math.round((new Date(session.expires_at).getTime() - Date.now()) / 1000));
  const [seconds, setSeconds] = useState(left);
  useEffect(() => {
    const timer = setInterval(() => {
      const s = left();
      setSeconds(s);
      if (s === 0) {
        clearInterval(timer);
        onExpired();
      }
    }, 1000);
    return () => clearInterval(timer);
  }, [session.expires_at, onExpired]);
  const low = seconds < 300;
  return (
    <section className={`session-bar${low ? ' session-bar-low' : ''}`} aria-label={t('console.bg.sessionLabel')}>
      <div className="session-main">
        <span className="session-badge">{t('console.bg.active')}</span>
        <span>
          {t(`console.scope.${session.scope}` as MessageKey)} · {t(`console.reason.${session.reason_category}` as MessageKey)}
        </span>
      </div>
      <div className="session-timer">
        <span className="muted small">{t('console.bg.endsIn')}</span>
        {/* The timer role is not live by default: screen readers read it on demand, not every second. */}
        <span role="timer" aria-label={t('console.bg.timeLeft', { time: formatCountdown(seconds) })} className="countdown">
          {formatCountdown(seconds)}
        </span>
        <button type="button" className="button button-secondary button-small" onClick={() => end.mutate()} disabled={end.isPending}>
          {t('console.bg.end')}
        </button>
      </div>
      {end.error ? <ServerError error={end.error} /> : null}
    </section>
  );
}
