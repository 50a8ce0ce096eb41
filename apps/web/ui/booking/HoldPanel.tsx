import type { ResponseOf } from '@clinic/client';
import {
  api,
  errorCode,
  FieldInput,
  formatCountdown,
  formatTime,
  idempotencyKey,
  isApiError,
  Notice,
  purposeName,
  type PageContext,
  Spinner,
  useI18n,
} from '@clinic/ui';
import { useMutation, useQuery } from '@tanstack/react-query';
import { type FormEvent, useEffect, useRef, useState } from 'react';
import type { Booked, Hold } from './Booker.tsx';

type Slot = ResponseOf<'getPublicAvailability'>['data']['slots'][number];

export interface HoldState {
  hold: Hold;
  slot: Slot;
  /** live until the stream says otherwise. */
  status: 'live' | 'expired' | 'released' | 'converted';
  secondsLeft: number | null;
}

/**
 * The reserved slot: a countdown driven by the hold's event stream (the server's clock, not the page's),
 * and the guest form. `expired` and `released` from the stream end the form and offer another time.
 */
export function HoldPanel({
  org,
  email,
  state,
  zone,
  clinicZone,
  onState,
  onBooked,
  onPickAgain,
}: {
  org: NonNullable<PageContext['organization']>;
  /** The signed-in visitor's address, to start the form with. */
  email: string | null;
  state: HoldState;
  zone: string;
  clinicZone: string | null;
  onState: (s: HoldState | ((prev: HoldState | null) => HoldState | null)) => void;
  onBooked: (a: Booked) => void;
  onPickAgain: () => void;
}) {
  const { t, lang } = useI18n();
  const { hold } = state;
  const [values, setValues] = useState({ name: '', email: email ?? '', phone: '', note: '' });
  const [intake, setIntake] = useState<Record<string, unknown>>({});
  const [accepted, setAccepted] = useState<Record<string, boolean>>({});
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [key] = useState(idempotencyKey);
  const first = useRef<HTMLInputElement>(null);

  // The stream: `remaining` each second, then one of released | converted | expired, then it closes.
  useEffect(() => {
    const es = new EventSource(`/v1/public/holds/${hold.id}/stream?secret=${encodeURIComponent(hold.secret)}`);
    const update = (patch: Partial<HoldState>) => onState((prev) => (prev && prev.hold.id === hold.id ? { ...prev, ...patch } : prev));
    es.addEventListener('remaining', (e) => {
      const data = JSON.parse((e as MessageEvent<string>).data) as { seconds_left: number };
      update({ secondsLeft: data.seconds_left });
    });
    for (const status of ['expired', 'released', 'converted'] as const)
      es.addEventListener(status, () => {
        es.close();
        update({ status, secondsLeft: 0 });
      });
    return () => es.close();
  }, [hold.id, hold.secret, onState]);

  const form = useQuery({
    queryKey: ['booking-form', org.id, hold.service_id],
    queryFn: async () => (await api.getPublicBookingForm({ query: { organization: org.id, service_id: hold.service_id } })).data.data,
  });

  // The first field takes focus once the form is there, so a keyboard user carries on typing.
  useEffect(() => {
    if (!form.isPending) first.current?.focus();
  }, [form.isPending]);

  const book = useMutation({
    mutationFn: async () =>
      (
        await api.bookAsGuest({
          body: {
            organization: org.id,
            hold_id: hold.id,
            secret: hold.secret,
            name: values.name.trim(),
            email: values.email.trim(),
            phone: values.phone.trim() || null,
            note: values.note.trim() || null,
            ...(form.data?.intake.length ? { intake } : {}),
            consents: (form.data?.consents ?? []).map((c) => ({ purpose_code: c.purpose_code, purpose_version: c.purpose_version })),
          },
          idempotencyKey: key,
        })
      ).data.data,
    onSuccess: onBooked,
    onError: (err) => {
      if (errorCode(err) === 'hold_ended') onState((prev) => (prev ? { ...prev, status: 'expired' } : prev));
      if (isApiError(err) && err.fields) setErrors(err.fields);
    },
  });

  const release = useMutation({
    mutationFn: () => api.releaseHold({ params: { id: hold.id }, headers: { 'x-hold-secret': hold.secret } }),
    onSettled: onPickAgain,
  });

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const problems: Record<string, string> = {};
    if (!values.name.trim()) problems.name = t('book.fieldRequired');
    if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(values.email.trim())) problems.email = t('book.emailInvalid');
    for (const c of form.data?.consents ?? [])
      if (!accepted[c.purpose_code]) problems[`consent.${c.purpose_code}`] = t('book.consentRequired');
    for (const f of form.data?.intake ?? []) {
      const v = intake[f.key];
      if (f.required && (v === undefined || v === null || v === '' || (Array.isArray(v) && !v.length)))
        problems[`intake.${f.key}`] = t('book.fieldRequired');
    }
    setErrors(problems);
    if (Object.keys(problems).length) {
      requestAnimationFrame(() => (document.querySelector('[aria-invalid="true"]') as HTMLElement | null)?.focus());
      return;
    }
    book.mutate();
  };

  if (state.status === 'expired' || state.status === 'released')
    return (
      <section className="card" aria-labelledby="ended-h">
        <h2 id="ended-h">{t('book.step.time')}</h2>
        <Notice kind="warning">{state.status === 'expired' ? t('book.expired') : t('book.released')}</Notice>
        <button type="button" className="button" onClick={onPickAgain}>
          {t('book.pickAgain')}
        </button>
      </section>
    );

  const start = state.slot.start;
  const err = (k: string) => errors[k];
  const input = (k: 'name' | 'email' | 'phone', label: string, type: string, autoComplete: string) => (
    <div className="field">
      <label htmlFor={`g-${k}`}>{label}</label>
      <input
        id={`g-${k}`}
        ref={k === 'name' ? first : undefined}
        type={type}
        autoComplete={autoComplete}
        required={k !== 'phone'}
        value={values[k]}
        aria-invalid={err(k) ? true : undefined}
        aria-describedby={err(k) ? `g-${k}-err` : undefined}
        onChange={(e) => setValues({ ...values, [k]: e.target.value })}
      />
      {err(k) && (
        <span className="field-error" id={`g-${k}-err`}>
          {err(k)}
        </span>
      )}
    </div>
  );

  return (
    <section className="card" aria-labelledby="details-h">
      <div className="hold-banner">
        <div>
          <p className="hold-time">
            {formatTime(start, zone, lang)}
            {clinicZone && clinicZone !== zone && (
              <span className="muted small"> · {t('book.clinicTime', { time: formatTime(start, clinicZone, lang) })}</span>
            )}
          </p>
        </div>
        <div className="countdown" role="timer" aria-label={t('book.heldAria')} aria-live="off">
          {state.secondsLeft === null ? '…' : formatCountdown(state.secondsLeft)}
        </div>
      </div>
      <p className="muted small" aria-live="polite">
        {state.secondsLeft !== null && state.secondsLeft % 60 === 0 && state.secondsLeft > 0
          ? t('book.held', { time: formatCountdown(state.secondsLeft) })
          : ''}
      </p>
      <h2 id="details-h">4. {t('book.details')}</h2>
      {form.isPending ? (
        <Spinner />
      ) : (
        <form noValidate onSubmit={submit}>
          <div className="form-grid">
            {input('name', t('book.name'), 'text', 'name')}
            {input('email', t('book.email'), 'email', 'email')}
            {input('phone', t('book.phone'), 'tel', 'tel')}
          </div>
          <div className="field">
            <label htmlFor="g-note">{t('book.note')}</label>
            <textarea id="g-note" value={values.note} maxLength={2000} onChange={(e) => setValues({ ...values, note: e.target.value })} />
          </div>
          {!!form.data?.intake.length && (
            <fieldset className="fieldset">
              <legend>{t('book.intake')}</legend>
              {form.data.intake.map((f) => (
                <FieldInput
                  key={f.key}
                  field={f}
                  value={intake[f.key]}
                  error={err(`intake.${f.key}`)}
                  onChange={(v) => setIntake({ ...intake, [f.key]: v })}
                />
              ))}
            </fieldset>
          )}
          {!!form.data?.consents.length && (
            <fieldset className="fieldset">
              <legend>{t('book.consents')}</legend>
              {form.data.consents.map((c) => {
                const id = `c-${c.purpose_code}`;
                const e = err(`consent.${c.purpose_code}`) ?? (err('consents') ? t('book.consentRequired') : undefined);
                return (
                  <div key={c.purpose_code} className="field">
                    <div className="checkbox">
                      <input
                        id={id}
                        type="checkbox"
                        checked={!!accepted[c.purpose_code]}
                        aria-invalid={e ? true : undefined}
                        aria-describedby={e ? `${id}-err` : undefined}
                        onChange={(ev) => setAccepted({ ...accepted, [c.purpose_code]: ev.target.checked })}
                      />
                      <label htmlFor={id}>{t('book.consentAccept', { name: purposeName(lang, c.purpose_code, c.name) })}</label>
                    </div>
                    <details className="consent-text">
                      <summary>{t('book.readText')}</summary>
                      <div className="consent-body" lang={c.texts[lang] ? lang : 'en'}>
                        {c.texts[lang] ?? c.texts.en}
                      </div>
                    </details>
                    {e && (
                      <span className="field-error" id={`${id}-err`}>
                        {e}
                      </span>
                    )}
                  </div>
                );
              })}
            </fieldset>
          )}
          {book.isError && (
            <Notice kind="error">
              {errorCode(book.error) === 'validation_error' || (isApiError(book.error) && book.error.fields)
                ? t('book.invalid')
                : errorCode(book.error) === 'rate_limited'
                  ? t('book.rateLimited')
                  : t('app.error')}
            </Notice>
          )}
          <div className="button-row">
            <button type="submit" className="button" disabled={book.isPending}>
              {book.isPending ? t('book.booking') : t('book.confirm')}
            </button>
            <button type="button" className="button button-secondary" onClick={() => release.mutate()} disabled={release.isPending}>
              {t('book.cancelHold')}
            </button>
          </div>
        </form>
      )}
    </section>
  );
}
