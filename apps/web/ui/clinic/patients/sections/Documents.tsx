import { api, formatDateTime, idempotencyKey, localDate, formatDay, type MessageKey, Notice, Spinner, useI18n } from '@clinic/ui';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { Empty, recordZone, type SectionProps, ServerError } from '../parts.tsx';
import { type Appointment, usePatientAppointments, usePickLabels } from './Appointments.tsx';

type Doc = Awaited<ReturnType<typeof api.listAppointmentDocuments>>['data']['data'][number];
interface Template {
  id: string;
  name: string;
  kind: string;
}

/** Appointments whose documents are listed: the latest ones that took place or will (a cancelled visit has none to issue). */
const DOC_APPOINTMENTS = 20;

/**
 * Documents of the patient's visits: each visit's PDFs (GET /v1/appointments/{id}/documents), downloaded through
 * the short-lived signed link of GET /v1/documents/{id}/download, and a new one rendered from a published
 * template (documents.create). Rendering on the worker shows its progress until the document is ready.
 */
export function DocumentsSection({ patientId, can }: SectionProps) {
  const { t, lang } = useI18n();
  const zone = recordZone();
  const qc = useQueryClient();
  const appts = usePatientAppointments(patientId);
  const visits = (appts.data?.data ?? []).filter((a) => a.status !== 'cancelled' && a.status !== 'rescheduled').slice(0, DOC_APPOINTMENTS);
  const services = usePickLabels(
    'services',
    visits.map((a) => a.service_id),
  );
  const docs = useQuery({
    queryKey: ['patient-documents', patientId, visits.map((a) => a.id)],
    enabled: appts.isSuccess,
    queryFn: async () => {
      const lists = await Promise.all(visits.map(async (a) => (await api.listAppointmentDocuments({ params: { id: a.id } })).data.data));
      return lists.flat().sort((x, y) => y.created_at.localeCompare(x.created_at));
    },
    // Rendering on the worker: look again until every document is ready or failed.
    refetchInterval: (q) => (q.state.data?.some((d) => d.status === 'queued' || d.status === 'rendering') ? 1500 : false),
  });
  const [error, setError] = useState<unknown>(null);
  const download = async (d: Doc) => {
    setError(null);
    try {
      const link = (await api.getDocumentDownload({ params: { id: d.id } })).data.data;
      // An attachment: the browser saves it and the record stays on screen.
      window.location.assign(link.url);
    } catch (err) {
      setError(err);
    }
  };
  const when = (a: Appointment | undefined) => {
    if (!a) return '';
    const day = localDate(a.starts_at, zone);
    const f = formatDay(day, lang);
    return `${f.day} ${f.month} ${day.slice(0, 4)}`;
  };
  const byId = new Map(visits.map((a) => [a.id, a]));

  if (appts.isPending || (appts.isSuccess && docs.isPending)) return <Spinner />;
  if (appts.isError) return <ServerError error={appts.error} />;
  if (docs.isError) return <ServerError error={docs.error} />;
  const list = docs.data ?? [];
  return (
    <div className="stack">
      {can('documents.create') && visits.length > 0 && (
        <NewDocument
          visits={visits}
          label={(a) => `${when(a)} · ${services.data?.get(a.service_id) ?? t('patients.docs.visit')}`}
          onCreated={() => void qc.invalidateQueries({ queryKey: ['patient-documents', patientId] })}
        />
      )}
      {error !== null && <ServerError error={error} />}
      <div className="card pr-card">
        <h2>{t('patients.docs.title')}</h2>
        {list.length === 0 ? (
          <Empty>{visits.length ? t('patients.docs.none') : t('patients.docs.noVisits')}</Empty>
        ) : (
          <ul className="list">
            {list.map((d) => (
              <li key={d.id} className="list-item">
                <div>
                  <strong>{d.title}</strong>
                  <div className="small muted">
                    {t(`patients.docs.kind.${d.kind}` as MessageKey)}
                    {d.appointment_id ? ` · ${t('patients.docs.fromVisit', { date: when(byId.get(d.appointment_id)) })}` : ''}
                    {' · '}
                    {formatDateTime(d.created_at, zone, lang)}
                    {d.page_count ? ` · ${t('patients.docs.pages', { n: d.page_count })}` : ''}
                  </div>
                </div>
                {d.status === 'ready' ? (
                  <button type="button" className="button button-secondary" onClick={() => void download(d)}>
                    {t('docs.download')}
                    <span className="visually-hidden"> {d.title}</span>
                  </button>
                ) : d.status === 'failed' ? (
                  <span className="badge badge-danger">{t('patients.docs.failed')}</span>
                ) : (
                  <span className="badge badge-muted" role="status">
                    {t('patients.docs.rendering', { percent: d.progress })}
                  </span>
                )}
              </li>
            ))}
          </ul>
        )}
      </div>
    </div>
  );
}

function NewDocument({ visits, label, onCreated }: { visits: Appointment[]; label: (a: Appointment) => string; onCreated: () => void }) {
  const { t } = useI18n();
  const templates = useQuery({
    queryKey: ['pdf-templates', 'published'],
    queryFn: async () =>
      ((await api.listPdfTemplates({ query: { published: 'true', limit: '200', sort: 'name' } })).data.data as Template[]).filter(
        (x) => x.kind !== 'form',
      ),
  });
  const [open, setOpen] = useState(false);
  const [form, setForm] = useState({ appointment: '', template: '', title: '', body: '' });
  const [key, setKey] = useState(idempotencyKey);
  const [done, setDone] = useState(false);
  const create = useMutation({
    mutationFn: async () =>
      (
        await api.createAppointmentDocument({
          params: { id: form.appointment || visits[0]!.id },
          body: { pdf_template_id: form.template || templates.data![0]!.id, ...(form.title ? { title: form.title } : {}), body: form.body },
          idempotencyKey: key,
        })
      ).data.data,
    onSuccess: () => {
      setDone(true);
      setOpen(false);
      setKey(idempotencyKey());
      setForm({ appointment: '', template: '', title: '', body: '' });
      onCreated();
    },
  });
  if (!open)
    return (
      <div className="pr-actions">
        {done && <Notice kind="success">{t('patients.docs.created')}</Notice>}
        <button
          type="button"
          className="button"
          onClick={() => {
            setDone(false);
            setOpen(true);
          }}
        >
          {t('patients.docs.new')}
        </button>
      </div>
    );
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  const none = templates.isSuccess && templates.data.length === 0;
  return (
    <form className="card pr-card" onSubmit={submit}>
      <h2>{t('patients.docs.new')}</h2>
      {create.isError && <ServerError error={create.error} />}
      {templates.isError && <ServerError error={templates.error} />}
      {none ? (
        <Notice kind="info">{t('patients.docs.noTemplates')}</Notice>
      ) : (
        <div className="pr-form-grid">
          <div className="field">
            <label htmlFor="doc-visit">{t('patients.docs.visit')}</label>
            <select id="doc-visit" value={form.appointment} onChange={(e) => setForm({ ...form, appointment: e.target.value })}>
              {visits.map((a) => (
                <option key={a.id} value={a.id}>
                  {label(a)}
                </option>
              ))}
            </select>
          </div>
          <div className="field">
            <label htmlFor="doc-template">{t('patients.docs.template')}</label>
            <select id="doc-template" value={form.template} onChange={(e) => setForm({ ...form, template: e.target.value })}>
              {(templates.data ?? []).map((x) => (
                <option key={x.id} value={x.id}>
                  {x.name} ({t(`patients.docs.kind.${x.kind}` as MessageKey)})
                </option>
              ))}
            </select>
          </div>
          <div className="field pr-wide">
            <label htmlFor="doc-title">{t('patients.docs.docTitle')}</label>
            <input id="doc-title" value={form.title} maxLength={200} onChange={(e) => setForm({ ...form, title: e.target.value })} />
          </div>
          <div className="field pr-wide">
            <label htmlFor="doc-body">{t('patients.docs.body')}</label>
            <textarea
              id="doc-body"
              rows={6}
              value={form.body}
              maxLength={20000}
              onChange={(e) => setForm({ ...form, body: e.target.value })}
            />
          </div>
        </div>
      )}
      <div className="button-row">
        {!none && (
          <button type="submit" className="button" disabled={create.isPending || !templates.isSuccess}>
            {create.isPending ? t('patients.docs.rendering', { percent: 0 }) : t('patients.docs.render')}
          </button>
        )}
        <button type="button" className="button button-secondary" onClick={() => setOpen(false)}>
          {t('patients.cancel')}
        </button>
      </div>
    </form>
  );
}
