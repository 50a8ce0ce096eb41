import { api, FieldInput, formatDateTime, isApiError, type MessageKey, Notice, Spinner, useI18n } from '@clinic/ui';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Empty, recordZone, type SectionProps, ServerError } from '../parts.tsx';

interface FormRow {
  id: string;
  title: string;
  status: string;
  template_version: number;
  signed_at: string | null;
  created_at: string;
}

/**
 * The patient's forms (GET /v1/forms?patient_id=): staff with forms.fill_org fill every field of an unsigned one
 * (private ones too), and with forms.sign sign it; a signed form is final (409 form_signed from the server).
 */
export function FormsSection({ patientId, can }: SectionProps) {
  const { t, lang } = useI18n();
  const zone = recordZone();
  const [open, setOpen] = useState<string | null>(null);
  const [signed, setSigned] = useState<string | null>(null);
  const forms = useQuery({
    queryKey: ['patient-forms', patientId],
    queryFn: async () =>
      (await api.listForms({ query: { patient_id: patientId, limit: '100', sort: '-created_at' } })).data.data as FormRow[],
  });
  if (forms.isPending) return <Spinner />;
  if (forms.isError) return <ServerError error={forms.error} />;
  if (!forms.data.length) return <Empty>{t('patients.forms.none')}</Empty>;
  const mayOpen = can('forms.fill_org') || can('forms.sign');
  return (
    <div className="card pr-card">
      <h2>{t('patients.tab.forms')}</h2>
      {signed && <Notice kind="success">{t('patients.forms.signed', { title: signed })}</Notice>}
      <ul className="list">
        {forms.data.map((f) => (
          <li key={f.id} className="list-item">
            <div>
              <strong>{f.title}</strong>{' '}
              <span className={`badge ${f.status === 'signed' ? 'badge-success' : 'badge-muted'}`}>
                {t(`patients.forms.status.${f.status}` as MessageKey)}
              </span>
              <div className="small muted">
                {t('patients.forms.created', { time: formatDateTime(f.created_at, zone, lang) })}
                {f.signed_at ? ` · ${t('patients.forms.signedAt', { time: formatDateTime(f.signed_at, zone, lang) })}` : ''}
              </div>
            </div>
            {f.status !== 'signed' && mayOpen && (
              <button
                type="button"
                className="button button-secondary"
                aria-expanded={open === f.id}
                onClick={() => setOpen(open === f.id ? null : f.id)}
              >
                {t('patients.forms.open')}
                <span className="visually-hidden"> {f.title}</span>
              </button>
            )}
            {open === f.id && (
              <StaffFill
                id={f.id}
                patientId={patientId}
                canFill={can('forms.fill_org')}
                canSign={can('forms.sign')}
                onSigned={() => {
                  setOpen(null);
                  setSigned(f.title);
                }}
              />
            )}
          </li>
        ))}
      </ul>
    </div>
  );
}

function StaffFill({
  id,
  patientId,
  canFill,
  canSign,
  onSigned,
}: {
  id: string;
  patientId: string;
  canFill: boolean;
  canSign: boolean;
  onSigned: () => void;
}) {
  const { t } = useI18n();
  const qc = useQueryClient();
  const form = useQuery({ queryKey: ['form', id], queryFn: async () => (await api.getForm({ params: { id } })).data.data });
  const [values, setValues] = useState<Record<string, unknown> | null>(null);
  const refresh = () => {
    void qc.invalidateQueries({ queryKey: ['patient-forms', patientId] });
    void qc.invalidateQueries({ queryKey: ['form', id] });
  };
  const save = useMutation({
    mutationFn: async () => (await api.fillForm({ params: { id }, body: { values: values ?? {} } })).data.data,
    onSuccess: () => {
      setValues(null);
      refresh();
    },
  });
  const sign = useMutation({
    mutationFn: async () => {
      if (values && canFill) await api.fillForm({ params: { id }, body: { values } });
      return (await api.signForm({ params: { id } })).data.data;
    },
    onSuccess: () => {
      refresh();
      onSigned();
    },
  });
  if (form.isPending) return <Spinner />;
  if (form.isError) return <ServerError error={form.error} />;
  const current = values ?? ((form.data.values ?? {}) as Record<string, unknown>);
  const failed = save.error ?? sign.error;
  const fieldErrors = failed && isApiError(failed) ? (failed.fields ?? {}) : {};
  return (
    <form
      className="pr-fill"
      onSubmit={(e) => {
        e.preventDefault();
        save.mutate();
      }}
    >
      {failed && <ServerError error={failed} />}
      {save.isSuccess && !values && <Notice kind="success">{t('forms.saved')}</Notice>}
      <fieldset className="plain" disabled={!canFill}>
        <legend className="visually-hidden">{form.data.title}</legend>
        {form.data.fields.map((f) => (
          <FieldInput
            key={f.key}
            field={f}
            value={current[f.key]}
            error={fieldErrors[`values.${f.key}`] ?? fieldErrors[f.key]}
            onChange={(v) => setValues({ ...current, [f.key]: v })}
          />
        ))}
      </fieldset>
      <div className="button-row">
        {canFill && (
          <button type="submit" className="button button-secondary" disabled={save.isPending}>
            {t('forms.save')}
          </button>
        )}
        {canSign && (
          <button type="button" className="button" disabled={sign.isPending} onClick={() => sign.mutate()}>
            {t('patients.forms.sign')}
            <span className="visually-hidden"> {form.data.title}</span>
          </button>
        )}
      </div>
    </form>
  );
}
