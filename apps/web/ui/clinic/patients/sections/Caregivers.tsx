import { api, formatDateTime, idempotencyKey, type MessageKey, Spinner, useI18n } from '@clinic/ui';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { Empty, recordZone, type SectionProps, ServerError } from '../parts.tsx';

const RELATIONSHIPS = ['parent', 'guardian', 'spouse', 'partner', 'child', 'relative', 'other'] as const;

/**
 * The people who act for the patient in the portal (GET /v1/patients/{id}/caregivers): staff with
 * patients.update_org add one by email (the clinic's approval) or end a link.
 */
export function CaregiversSection({ patientId, can }: SectionProps) {
  const { t, lang } = useI18n();
  const zone = recordZone();
  const qc = useQueryClient();
  const list = useQuery({
    queryKey: ['patient-caregivers', patientId],
    queryFn: async () => (await api.listCaregivers({ params: { id: patientId } })).data.data,
  });
  const [email, setEmail] = useState('');
  const [relationship, setRelationship] = useState('');
  const [key, setKey] = useState(idempotencyKey);
  const refresh = () => void qc.invalidateQueries({ queryKey: ['patient-caregivers', patientId] });
  const add = useMutation({
    mutationFn: async () =>
      api.addCaregiver({
        params: { id: patientId },
        body: { email: email.trim(), relationship: (relationship || null) as (typeof RELATIONSHIPS)[number] | null },
        idempotencyKey: key,
      }),
    onSuccess: () => {
      setEmail('');
      setRelationship('');
      setKey(idempotencyKey());
      refresh();
    },
  });
  const remove = useMutation({
    mutationFn: async (linkId: string) => api.removeCaregiver({ params: { id: patientId, linkId } }),
    onSuccess: refresh,
  });
  if (list.isPending) return <Spinner />;
  if (list.isError) return <ServerError error={list.error} />;
  const editable = can('patients.update_org');
  const submit = (e: FormEvent) => {
    e.preventDefault();
    add.mutate();
  };
  return (
    <div className="stack">
      <div className="card pr-card">
        <h2>{t('patients.tab.caregivers')}</h2>
        <p className="muted small">{t('patients.care.lead')}</p>
        {remove.isError && <ServerError error={remove.error} />}
        {list.data.length === 0 ? (
          <Empty>{t('patients.care.none')}</Empty>
        ) : (
          <ul className="list">
            {list.data.map((c) => (
              <li key={c.id} className="list-item">
                <div>
                  <strong>{c.caregiver_email ?? '—'}</strong>{' '}
                  {c.relationship && <span className="badge badge-muted">{t(`patients.care.rel.${c.relationship}` as MessageKey)}</span>}
                  <div className="small muted">
                    {t(c.approved_by === 'staff' ? 'patients.care.byClinic' : 'patients.care.byPatient', {
                      time: formatDateTime(c.created_at, zone, lang),
                    })}
                    {c.revoked_at ? ` · ${t('patients.care.ended', { time: formatDateTime(c.revoked_at, zone, lang) })}` : ''}
                  </div>
                </div>
                {editable && !c.revoked_at && (
                  <button type="button" className="button button-secondary" disabled={remove.isPending} onClick={() => remove.mutate(c.id)}>
                    {t('patients.care.remove')}
                    <span className="visually-hidden"> {c.caregiver_email}</span>
                  </button>
                )}
              </li>
            ))}
          </ul>
        )}
      </div>
      {editable && (
        <form className="card pr-card" onSubmit={submit}>
          <h2>{t('patients.care.add')}</h2>
          {add.isError && <ServerError error={add.error} />}
          <div className="pr-form-grid">
            <div className="field">
              <label htmlFor="cg-email">{t('patients.care.email')}</label>
              <input id="cg-email" type="email" required value={email} onChange={(e) => setEmail(e.target.value)} />
            </div>
            <div className="field">
              <label htmlFor="cg-rel">{t('patients.care.relationship')}</label>
              <select id="cg-rel" value={relationship} onChange={(e) => setRelationship(e.target.value)}>
                <option value="">—</option>
                {RELATIONSHIPS.map((r) => (
                  <option key={r} value={r}>
                    {t(`patients.care.rel.${r}`)}
                  </option>
                ))}
              </select>
            </div>
          </div>
          <button type="submit" className="button" disabled={add.isPending || !email.trim()}>
            {t('patients.care.add')}
          </button>
        </form>
      )}
    </div>
  );
}
