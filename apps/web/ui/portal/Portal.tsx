import type { ResponseOf } from '@clinic/client';
import {
  api,
  errorCode,
  FieldInput,
  formatDateTime,
  formatLongDate,
  formatTime,
  idempotencyKey,
  isApiError,
  Notice,
  type PageContext,
  purposeName,
  Spinner,
  useI18n,
} from '@clinic/ui';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { lazy, type ReactNode, Suspense, useState } from 'react';
import { clearMissingConsents, type MissingConsent, useMissingConsents } from './consent-store.ts';

type Appointment = ResponseOf<'listAppointments'>['data'][number];
type Org = NonNullable<PageContext['organization']>;
type Tab = 'appointments' | 'documents' | 'forms' | 'session' | 'progress' | 'data';
const TABS: Tab[] = ['appointments', 'documents', 'forms', 'session', 'progress', 'data'];
// The video player (hls.js) and the chart load only when their tab is opened.
const Session = lazy(() => import('./Session.tsx'));
const Progress = lazy(() => import('./Progress.tsx'));

/** The zone appointments are shown in: the browser's (the patient is where the browser is). */
const zone = Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';

export function Portal({ ctx }: { ctx: PageContext }) {
  const { t } = useI18n();
  const [tab, setTab] = useState<Tab>('appointments');
  const [actingFor, setActingFor] = useState<string>('');
  if (!ctx.organization) return <Notice kind="error">{t('app.noClinic')}</Notice>;
  if (!ctx.signedIn)
    return (
      <section className="card signed-out" aria-labelledby="portal-h">
        <h1 id="portal-h">{t('portal.title')}</h1>
        <p>{t('portal.signedOut')}</p>
      </section>
    );
  // Caregivers send X-Patient-ID with every call made for the person they act for.
  const headers = actingFor ? { 'x-patient-id': actingFor } : undefined;
  return (
    <ConsentGate org={ctx.organization}>
      <div className="page-head portal-head">
        <h1>{t('portal.title')}</h1>
        <PersonSwitcher value={actingFor} onChange={setActingFor} />
      </div>
      <div className="tabs" role="tablist" aria-label={t('portal.tabs')}>
        {TABS.map((k) => (
          <button
            key={k}
            type="button"
            role="tab"
            id={`tab-${k}`}
            aria-selected={tab === k}
            aria-controls={`panel-${k}`}
            tabIndex={tab === k ? 0 : -1}
            className="tab"
            onClick={() => setTab(k)}
            onKeyDown={(e) => {
              const i = TABS.indexOf(k);
              const next =
                e.key === 'ArrowRight'
                  ? TABS[(i + 1) % TABS.length]
                  : e.key === 'ArrowLeft'
                    ? TABS[(i + TABS.length - 1) % TABS.length]
                    : null;
              if (next) {
                setTab(next);
                document.getElementById(`tab-${next}`)?.focus();
              }
            }}
          >
            {t(`portal.${k}`)}
          </button>
        ))}
      </div>
      <div role="tabpanel" id={`panel-${tab}`} aria-labelledby={`tab-${tab}`} className="card">
        {tab === 'appointments' && <Appointments org={ctx.organization} headers={headers} />}
        {tab === 'documents' && <Documents headers={headers} />}
        {tab === 'forms' && <Forms headers={headers} />}
        {tab === 'data' && <MyData />}
        <Suspense fallback={<Spinner />}>
          {tab === 'session' && <Session headers={headers} />}
          {tab === 'progress' && <Progress headers={headers} />}
        </Suspense>
      </div>
    </ConsentGate>
  );
}

function PersonSwitcher({ value, onChange }: { value: string; onChange: (id: string) => void }) {
  const { t } = useI18n();
  const caring = useQuery({ queryKey: ['caregiving'], queryFn: async () => (await api.listMyCaregiving()).data.data });
  if (!caring.data?.length) return null;
  return (
    <div className="field person-switcher">
      <label htmlFor="acting-for">{t('portal.actingFor')}</label>
      <select id="acting-for" value={value} onChange={(e) => onChange(e.target.value)}>
        <option value="">{t('portal.myself')}</option>
        {caring.data.map((p) => (
          <option key={p.id} value={p.patient_id}>
            {p.first_name} {p.last_name}
          </option>
        ))}
      </select>
    </div>
  );
}

/** While any call has answered 412 consent_required, the consent screen replaces the portal until they are given. */
function ConsentGate({ org, children }: { org: Org; children: ReactNode }) {
  const { t, lang } = useI18n();
  const queryClient = useQueryClient();
  const me = useQuery({ queryKey: ['me'], queryFn: async () => (await api.getMe()).data.data });
  // Someone who signs in on a clinic where they are not yet a patient joins it by accepting its consents
  // (POST /v1/portal/onboard); a patient whose consents are missing or outdated meets the API's 412.
  const clinics = useQuery({ queryKey: ['my-clinics'], queryFn: async () => (await api.listMyClinics()).data.data });
  const here = clinics.data?.find((c) => c.id === org.id);
  const joining = !!clinics.data && !here?.is_patient && !here?.is_staff;
  const gateMissing = useMissingConsents();
  const purposes = useQuery({
    queryKey: ['consent-purposes'],
    enabled: !!gateMissing || joining,
    queryFn: async () => (await api.listConsentPurposes()).data.data,
  });
  const missing: MissingConsent[] | null =
    gateMissing ??
    (joining && purposes.data
      ? purposes.data
          .filter((p) => p.required && p.scope === 'org' && p.latest)
          .map((p) => ({ purpose_code: p.code, organization_id: org.id, version: p.latest!.version }))
      : null);
  const [checked, setChecked] = useState<Record<string, boolean>>({});
  const grant = useMutation({
    mutationFn: async () => {
      const grants = (missing ?? []).map((m) => ({
        organization_id: m.organization_id,
        purpose_code: m.purpose_code,
        purpose_version: m.version,
        source: 'signup_checkbox' as const,
      }));
      if (joining && !gateMissing)
        await api.onboardPatient({ body: { organization_id: org.id, grants }, idempotencyKey: idempotencyKey() });
      else await api.grantMyConsents({ body: { grants } });
    },
    onSuccess: () => {
      clearMissingConsents();
      void queryClient.invalidateQueries();
    },
  });
  if (me.isPending || clinics.isPending || (joining && purposes.isPending)) return <Spinner />;
  if (missing)
    return (
      <section className="card consent-screen" aria-labelledby="consent-h">
        <h1 id="consent-h">{t('consent.title')}</h1>
        <p className="muted">{t('consent.lead')}</p>
        {purposes.isPending ? (
          <Spinner />
        ) : (
          <form
            onSubmit={(e) => {
              e.preventDefault();
              grant.mutate();
            }}
          >
            {missing.map((m) => {
              const p = purposes.data?.find((x) => x.code === m.purpose_code);
              const texts = (p?.latest?.body_translations ?? {}) as Record<string, string>;
              const id = `consent-${m.purpose_code}`;
              return (
                <div key={m.purpose_code} className="consent-item">
                  <h2>{purposeName(lang, m.purpose_code, p?.name)}</h2>
                  <div className="consent-body" lang={texts[lang] ? lang : 'en'}>
                    {texts[lang] ?? texts.en ?? p?.description}
                  </div>
                  <div className="checkbox">
                    <input
                      id={id}
                      type="checkbox"
                      checked={!!checked[m.purpose_code]}
                      onChange={(e) => setChecked({ ...checked, [m.purpose_code]: e.target.checked })}
                    />
                    <label htmlFor={id}>
                      {t('consent.accept')}: {purposeName(lang, m.purpose_code, p?.name)}
                    </label>
                  </div>
                </div>
              );
            })}
            {grant.isError && <Notice kind="error">{t('app.error')}</Notice>}
            <button type="submit" className="button" disabled={!missing.every((m) => checked[m.purpose_code]) || grant.isPending}>
              {t('consent.continue')}
            </button>
          </form>
        )}
      </section>
    );
  if (me.isError) return <Notice kind="error">{t('app.error')}</Notice>;
  return <>{children}</>;
}

const OPEN = new Set(['scheduled', 'confirmed']);

/** Names of the clinic's services, specialists and locations, from its public directory. */
function useDirectory(org: Org) {
  const services = useQuery({
    queryKey: ['public-services', org.id],
    queryFn: async () => (await api.listPublicServices({ query: { organization: org.id, limit: '500' } })).data.data,
  });
  const specialists = useQuery({
    queryKey: ['public-specialists', org.id],
    queryFn: async () => (await api.listPublicSpecialists({ query: { organization: org.id, limit: '500' } })).data.data,
  });
  const locations = useQuery({
    queryKey: ['public-locations', org.id],
    queryFn: async () => (await api.listPublicLocations({ query: { organization: org.id, limit: '500' } })).data.data,
  });
  return {
    service: (id: string) => services.data?.find((x) => x.id === id)?.name ?? '',
    specialist: (id: string | null) => specialists.data?.find((x) => x.id === id)?.display_name ?? '',
    location: (id: string | null) => locations.data?.find((x) => x.id === id)?.name ?? '',
  };
}

function Appointments({ org, headers }: { org: Org; headers: Record<string, string> | undefined }) {
  const { t, lang } = useI18n();
  const queryClient = useQueryClient();
  const dir = useDirectory(org);
  const [moving, setMoving] = useState<string | null>(null);
  const list = useQuery({
    queryKey: ['appointments', headers],
    queryFn: async () =>
      (await api.listAppointments({ query: { limit: '100', sort: '-starts_at' }, ...(headers ? { headers } : {}) })).data.data,
  });
  const [confirming, setConfirming] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const cancel = useMutation({
    mutationFn: (id: string) => api.updateAppointment({ params: { id }, body: { status: 'cancelled' }, ...(headers ? { headers } : {}) }),
    // The list is fetched again before the notice shows, so what the notice says is what the list shows.
    onSuccess: async () => {
      await queryClient.invalidateQueries({ queryKey: ['appointments'] });
      setConfirming(null);
      setDone(t('appt.cancelled'));
    },
  });
  if (list.isPending) return <Spinner />;
  if (list.isError) return <Notice kind="error">{t('app.error')}</Notice>;
  const now = new Date().toISOString();
  const upcoming = list.data.filter((a) => a.starts_at >= now && OPEN.has(a.status)).reverse();
  const past = list.data.filter((a) => !(a.starts_at >= now && OPEN.has(a.status)));
  const item = (a: Appointment, open: boolean) => {
    const until = new Date(Date.parse(a.starts_at) - a.cancellation_window_minutes * 60_000);
    return (
      <li key={a.id} className="list-item">
        <div>
          <p className="appt-service">{dir.service(a.service_id)}</p>
          <p className="appt-when">
            <strong>{formatLongDate(a.starts_at, zone, lang)}</strong>, {formatTime(a.starts_at, zone, lang)} –{' '}
            {formatTime(a.ends_at, zone, lang)}
          </p>
          <p className="muted small appt-who">
            {[dir.specialist(a.specialist_id), dir.location(a.location_id)].filter(Boolean).join(' · ')}
          </p>
          <span className={`badge ${open ? '' : 'badge-muted'}`}>{t(`appt.status.${a.status}` as 'appt.status.done')}</span>
          {open && a.cancellation_window_minutes > 0 && (
            <p className="muted small">{t('appt.canChangeUntil', { time: formatDateTime(until, zone, lang) })}</p>
          )}
        </div>
        {open &&
          (confirming === a.id ? (
            <div className="button-row">
              <span>{t('appt.cancelConfirm')}</span>
              <button type="button" className="button button-danger" onClick={() => cancel.mutate(a.id)} disabled={cancel.isPending}>
                {t('appt.cancelYes')}
              </button>
              <button type="button" className="button button-secondary" onClick={() => setConfirming(null)}>
                {t('appt.keep')}
              </button>
            </div>
          ) : (
            <div className="button-row">
              <button
                type="button"
                className="button button-secondary"
                onClick={() => setMoving(moving === a.id ? null : a.id)}
                aria-expanded={moving === a.id}
              >
                {t('appt.reschedule')}
              </button>
              <button type="button" className="button button-secondary" onClick={() => setConfirming(a.id)}>
                {t('appt.cancel')}
              </button>
            </div>
          ))}
        {open && moving === a.id && (
          <Reschedule
            org={org}
            appointment={a}
            headers={headers}
            onDone={async () => {
              await queryClient.invalidateQueries({ queryKey: ['appointments'] });
              setMoving(null);
              setDone(t('appt.rescheduled'));
            }}
          />
        )}
      </li>
    );
  };
  return (
    <div>
      {done && <Notice kind="success">{done}</Notice>}
      {cancel.isError && (
        <Notice kind="error">{errorCode(cancel.error) === 'cancellation_window_passed' ? t('appt.windowPassed') : t('app.error')}</Notice>
      )}
      <h2>{t('appt.upcoming')}</h2>
      {upcoming.length ? <ul className="list">{upcoming.map((a) => item(a, true))}</ul> : <p className="muted">{t('appt.none')}</p>}
      <h2 className="spaced">{t('appt.past')}</h2>
      {past.length ? <ul className="list">{past.map((a) => item(a, false))}</ul> : <p className="muted">{t('appt.none')}</p>}
    </div>
  );
}

function Documents({ headers }: { headers: Record<string, string> | undefined }) {
  const { t, lang } = useI18n();
  const h = headers ? { headers } : {};
  const docs = useQuery({
    queryKey: ['documents', headers],
    queryFn: async () => {
      const appts = (await api.listAppointments({ query: { limit: '50', sort: '-starts_at' }, ...h })).data.data;
      const lists = await Promise.all(
        appts.map(async (a) =>
          ((await api.listAppointmentDocuments({ params: { id: a.id }, ...h })).data.data as { id: string; title?: string }[]).map((d) => ({
            ...d,
            at: a.starts_at,
          })),
        ),
      );
      return lists.flat();
    },
  });
  const download = useMutation({
    mutationFn: async (id: string) => (await api.getAppointmentDocumentDownload({ params: { id }, ...h })).data.data.url,
    onSuccess: (url) => window.location.assign(url),
  });
  if (docs.isPending) return <Spinner />;
  if (docs.isError) return <Notice kind="error">{t('app.error')}</Notice>;
  if (!docs.data.length) return <p className="muted">{t('docs.none')}</p>;
  return (
    <ul className="list">
      {docs.data.map((d) => (
        <li key={d.id} className="list-item">
          <div>
            <strong>{d.title ?? t('portal.documents')}</strong>
            <p className="muted small">{t('docs.from', { date: formatLongDate(d.at, zone, lang) })}</p>
          </div>
          <button type="button" className="button button-secondary" onClick={() => download.mutate(d.id)}>
            {t('docs.download')}
          </button>
        </li>
      ))}
    </ul>
  );
}

function Forms({ headers }: { headers: Record<string, string> | undefined }) {
  const { t } = useI18n();
  const [open, setOpen] = useState<string | null>(null);
  const forms = useQuery({
    queryKey: ['forms', headers],
    queryFn: async () =>
      (await api.listForms({ query: { limit: '100' }, ...(headers ? { headers } : {}) })).data.data as {
        id: string;
        title: string;
        status: string;
      }[],
  });
  if (forms.isPending) return <Spinner />;
  if (forms.isError) return <Notice kind="error">{t('app.error')}</Notice>;
  if (!forms.data.length) return <p className="muted">{t('forms.none')}</p>;
  return (
    <ul className="list">
      {forms.data.map((f) => (
        <li key={f.id} className="list-item">
          <div>
            <strong>{f.title}</strong>{' '}
            <span className={`badge ${f.status === 'signed' ? 'badge-muted' : ''}`}>
              {t(`forms.status.${f.status}` as 'forms.status.pending')}
            </span>
          </div>
          {f.status === 'pending' && (
            <button
              type="button"
              className="button button-secondary"
              aria-expanded={open === f.id}
              onClick={() => setOpen(open === f.id ? null : f.id)}
            >
              {t('forms.fill')}
            </button>
          )}
          {open === f.id && <FillForm id={f.id} headers={headers} />}
        </li>
      ))}
    </ul>
  );
}

/** A form's questions (those that are the patient's to answer) and a save through PATCH /v1/forms/{id}. */
function FillForm({ id, headers }: { id: string; headers: Record<string, string> | undefined }) {
  const { t } = useI18n();
  const h = headers ? { headers } : {};
  const form = useQuery({ queryKey: ['form', id, headers], queryFn: async () => (await api.getForm({ params: { id }, ...h })).data.data });
  const [values, setValues] = useState<Record<string, unknown> | null>(null);
  const [errors, setErrors] = useState<Record<string, string>>({});
  const save = useMutation({
    mutationFn: () => api.fillForm({ params: { id }, body: { values: values ?? {} }, ...h }),
    onError: (err) => setErrors(isApiError(err) && err.fields ? err.fields : {}),
    onSuccess: () => setErrors({}),
  });
  if (form.isPending) return <Spinner />;
  if (form.isError) return <Notice kind="error">{t('app.error')}</Notice>;
  const current = values ?? ((form.data.values ?? {}) as Record<string, unknown>);
  return (
    <form
      className="fill-form"
      onSubmit={(e) => {
        e.preventDefault();
        save.mutate();
      }}
    >
      {form.data.fields
        .filter((f) => !f.private)
        .map((f) => (
          <FieldInput
            key={f.key}
            field={f}
            value={current[f.key]}
            error={errors[`values.${f.key}`] ?? errors[f.key]}
            onChange={(v) => setValues({ ...current, [f.key]: v })}
          />
        ))}
      {save.isSuccess && <Notice kind="success">{t('forms.saved')}</Notice>}
      {save.isError && <Notice kind="error">{t('book.invalid')}</Notice>}
      <button type="submit" className="button" disabled={save.isPending}>
        {t('forms.save')}
      </button>
    </form>
  );
}

function MyData() {
  const { t } = useI18n();
  const [exportId, setExportId] = useState<string | null>(null);
  const [confirm, setConfirm] = useState('');
  const [asking, setAsking] = useState(false);
  const start = useMutation({
    mutationFn: async () => (await api.exportData({ body: {}, idempotencyKey: idempotencyKey() })).data.data as { id: string },
    onSuccess: (job) => setExportId(job.id),
  });
  const job = useQuery({
    queryKey: ['export', exportId],
    enabled: !!exportId,
    queryFn: async () => (await api.getExport({ params: { id: exportId! } })).data.data,
    refetchInterval: (q) => (q.state.data?.status === 'done' || q.state.data?.status === 'failed' ? false : 1500),
  });
  const download = useMutation({
    mutationFn: async () => (await api.downloadExport({ params: { id: exportId! } })).data as unknown as { data: { url: string } },
    onSuccess: (r) => window.location.assign(r.data.url),
  });
  const erase = useMutation({ mutationFn: () => api.eraseData({ body: {} }) });
  return (
    <div className="stack">
      <section aria-labelledby="export-h">
        <h2 id="export-h">{t('data.exportTitle')}</h2>
        <p className="muted">{t('data.exportLead')}</p>
        {!exportId && (
          <button type="button" className="button" onClick={() => start.mutate()} disabled={start.isPending}>
            {t('data.export')}
          </button>
        )}
        {job.data && job.data.status !== 'done' && <Spinner label={t('data.exportPreparing', { percent: job.data.progress })} />}
        {job.data?.status === 'done' && (
          <>
            <Notice kind="success">{t('data.exportReady')}</Notice>
            <button type="button" className="button" onClick={() => download.mutate()}>
              {t('data.exportDownload')}
            </button>
          </>
        )}
        {(start.isError || job.data?.status === 'failed') && <Notice kind="error">{t('app.error')}</Notice>}
      </section>
      <section aria-labelledby="erase-h" className="danger-zone">
        <h2 id="erase-h">{t('data.eraseTitle')}</h2>
        <p className="muted">{t('data.eraseLead')}</p>
        {erase.isSuccess ? (
          <Notice kind="success">{t('data.erased')}</Notice>
        ) : !asking ? (
          <button type="button" className="button button-danger" onClick={() => setAsking(true)}>
            {t('data.erase')}
          </button>
        ) : (
          <form
            onSubmit={(e) => {
              e.preventDefault();
              if (confirm === 'DELETE') erase.mutate();
            }}
          >
            <div className="field">
              <label htmlFor="erase-confirm">{t('data.eraseConfirm')}</label>
              <input id="erase-confirm" value={confirm} onChange={(e) => setConfirm(e.target.value)} autoComplete="off" />
            </div>
            <div className="button-row">
              <button type="submit" className="button button-danger" disabled={confirm !== 'DELETE' || erase.isPending}>
                {t('data.eraseYes')}
              </button>
              <button type="button" className="button button-secondary" onClick={() => setAsking(false)}>
                {t('appt.keep')}
              </button>
            </div>
            {erase.isError && <Notice kind="error">{t('app.error')}</Notice>}
          </form>
        )}
      </section>
    </div>
  );
}

/** Moves an appointment: free times of the same service and specialist over the next two weeks, then PATCH start. */
function Reschedule({
  org,
  appointment,
  headers,
  onDone,
}: {
  org: Org;
  appointment: Appointment;
  headers: Record<string, string> | undefined;
  onDone: () => void;
}) {
  const { t, lang } = useI18n();
  const from = new Date().toISOString().slice(0, 10);
  const to = new Date(Date.now() + 13 * 86_400_000).toISOString().slice(0, 10);
  const slots = useQuery({
    queryKey: ['reschedule-slots', appointment.id],
    queryFn: async () =>
      (
        await api.getPublicAvailability({
          query: {
            organization: org.id,
            service_id: appointment.service_id,
            from,
            to,
            time_zone: zone,
            ...(appointment.specialist_id ? { specialist_id: appointment.specialist_id } : {}),
          },
        })
      ).data.data.slots.slice(0, 24),
  });
  const move = useMutation({
    mutationFn: (start: string) =>
      api.updateAppointment({ params: { id: appointment.id }, body: { start }, ...(headers ? { headers } : {}) }),
    onSuccess: onDone,
  });
  return (
    <fieldset className="plain reschedule">
      <legend className="reschedule-title">{t('appt.rescheduleTitle')}</legend>
      {slots.isPending ? (
        <Spinner />
      ) : slots.isError ? (
        <Notice kind="error">{t('app.error')}</Notice>
      ) : slots.data.length === 0 ? (
        <p className="muted">{t('book.noSlots', { n: 14 })}</p>
      ) : (
        <div className="slot-list">
          {slots.data.map((s) => (
            <button
              key={s.start}
              type="button"
              className="button button-secondary"
              disabled={move.isPending}
              onClick={() => move.mutate(s.start)}
            >
              {formatDateTime(s.start, zone, lang)}
            </button>
          ))}
        </div>
      )}
      {move.isError && (
        <Notice kind="error">
          {errorCode(move.error) === 'cancellation_window_passed'
            ? t('appt.windowPassed')
            : errorCode(move.error) === 'slot_unavailable'
              ? t('appt.slotTaken')
              : t('app.error')}
        </Notice>
      )}
    </fieldset>
  );
}
