import { api, formatDateTime, purposeName, Spinner, useI18n } from '@clinic/ui';
import { useQuery } from '@tanstack/react-query';
import { Empty, recordZone, type SectionProps, ServerError } from '../parts.tsx';

interface LedgerRow {
  id: string;
  purpose_version: number;
  source: string;
  granted_at: string;
  withdrawn_at: string | null;
  withdrawal_reason: string | null;
}

/** The consent ledger of this clinic for the patient, read-only: each purpose's state and every row it ever had. */
export function ConsentsSection({ patientId, ctx }: SectionProps) {
  const { t, lang } = useI18n();
  const zone = recordZone();
  const orgId = ctx.organization?.id ?? '';
  const consents = useQuery({
    queryKey: ['patient-consents', patientId],
    queryFn: async () => (await api.listPatientConsents({ params: { org_id: orgId, patient_id: patientId } })).data.data,
  });
  const purposes = useQuery({
    queryKey: ['consent-purposes'],
    queryFn: async () => (await api.listConsentPurposes()).data.data as { code: string; name: string }[],
  });
  if (consents.isPending) return <Spinner />;
  if (consents.isError) return <ServerError error={consents.error} />;
  const names = new Map((purposes.data ?? []).map((p) => [p.code, p.name]));
  // The purposes with a ledger first (what the patient actually decided), then the ones never asked, by name.
  const label = (code: string) => purposeName(lang, code, names.get(code));
  const groups = [...consents.data].sort(
    (a, b) =>
      Number(b.history.length > 0) - Number(a.history.length > 0) || label(a.purpose_code).localeCompare(label(b.purpose_code), lang),
  );
  if (!groups.length) return <Empty>{t('patients.consents.none')}</Empty>;
  return (
    <div className="card pr-card">
      <h2>{t('patients.consents.title')}</h2>
      <p className="muted small">{t('patients.consents.lead')}</p>
      <table className="data-table pr-table">
        <caption className="visually-hidden">{t('patients.consents.title')}</caption>
        <thead>
          <tr>
            <th scope="col">{t('patients.consents.purpose')}</th>
            <th scope="col">{t('patients.consents.state')}</th>
            <th scope="col">{t('patients.consents.version')}</th>
            <th scope="col">{t('patients.consents.when')}</th>
            <th scope="col">{t('patients.consents.source')}</th>
          </tr>
        </thead>
        <tbody>
          {groups.flatMap((g) => {
            const history = g.history as LedgerRow[];
            const name = label(g.purpose_code);
            if (!history.length)
              return [
                <tr key={g.purpose_code}>
                  <th scope="row">{name}</th>
                  <td>
                    <span className="badge badge-muted">{t('patients.consents.never')}</span>
                  </td>
                  <td>—</td>
                  <td>—</td>
                  <td>—</td>
                </tr>,
              ];
            return history.map((r, i) => (
              <tr key={r.id} className={i > 0 ? 'pr-history' : undefined}>
                <th scope="row">{i === 0 ? name : <span className="visually-hidden">{name}</span>}</th>
                <td>
                  {r.withdrawn_at ? (
                    <span className="badge badge-warning">{t('patients.consents.withdrawn')}</span>
                  ) : g.current?.id === r.id ? (
                    <span className="badge badge-success">{t('patients.consents.granted')}</span>
                  ) : (
                    <span className="badge badge-muted">{t('patients.consents.superseded')}</span>
                  )}
                </td>
                <td>v{r.purpose_version}</td>
                <td>
                  {formatDateTime(r.granted_at, zone, lang)}
                  {r.withdrawn_at && (
                    <div className="small muted">
                      {t('patients.consents.withdrawnAt', { time: formatDateTime(r.withdrawn_at, zone, lang) })}
                      {r.withdrawal_reason ? ` · ${r.withdrawal_reason}` : ''}
                    </div>
                  )}
                </td>
                <td>{t(`patients.consents.src.${r.source}` as 'patients.consents.src.api')}</td>
              </tr>
            ));
          })}
        </tbody>
      </table>
    </div>
  );
}
