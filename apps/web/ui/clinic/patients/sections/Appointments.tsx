import { api, formatDay, formatTime, localDate, type MessageKey, Spinner, useI18n } from '@clinic/ui';
import { useQuery } from '@tanstack/react-query';
import { Empty, recordZone, type SectionProps, ServerError } from '../parts.tsx';

export type Appointment = Awaited<ReturnType<typeof api.listAppointments>>['data']['data'][number];

/** Labels of picker rows (services, specialists) by id; a caller without the picker's code simply gets none. */
export function usePickLabels(kind: 'services' | 'specialists', ids: string[]) {
  const unique = [...new Set(ids)].sort();
  return useQuery({
    queryKey: ['pick', kind, unique],
    enabled: unique.length > 0,
    queryFn: async () => {
      const query = { ids: unique.slice(0, 50).join(','), limit: '50' };
      const res = kind === 'services' ? await api.pickServices({ query }) : await api.pickSpecialists({ query });
      return new Map(res.data.data.map((r) => [r.id, r.label]));
    },
    retry: false,
  });
}

/** The patient's appointments, the next ones first and then the past (GET /v1/appointments?patient_id=). */
export function usePatientAppointments(patientId: string) {
  return useQuery({
    queryKey: ['patient-appointments', patientId],
    queryFn: async () =>
      (await api.listAppointments({ query: { patient_id: patientId, sort: '-starts_at', limit: '100' } })).data as {
        data: Appointment[];
        pagination: { total: number };
      },
  });
}

export function AppointmentsSection({ patientId }: SectionProps) {
  const { t, lang } = useI18n();
  const zone = recordZone();
  const list = usePatientAppointments(patientId);
  const rows = list.data?.data ?? [];
  const services = usePickLabels(
    'services',
    rows.map((a) => a.service_id),
  );
  const specialists = usePickLabels(
    'specialists',
    rows.flatMap((a) => (a.specialist_id ? [a.specialist_id] : [])),
  );
  if (list.isPending) return <Spinner />;
  if (list.isError) return <ServerError error={list.error} />;
  if (!rows.length) return <Empty>{t('patients.appts.none')}</Empty>;
  const now = Date.now();
  const upcoming = rows.filter((a) => new Date(a.starts_at).getTime() >= now).reverse();
  const past = rows.filter((a) => new Date(a.starts_at).getTime() < now);
  const table = (title: string, items: Appointment[]) =>
    items.length > 0 && (
      <div className="card pr-card">
        <h2>{title}</h2>
        <table className="data-table pr-table">
          <caption className="visually-hidden">{title}</caption>
          <thead>
            <tr>
              <th scope="col">{t('patients.appts.when')}</th>
              <th scope="col">{t('patients.appts.service')}</th>
              <th scope="col">{t('patients.appts.specialist')}</th>
              <th scope="col">{t('patients.appts.status')}</th>
            </tr>
          </thead>
          <tbody>
            {items.map((a) => {
              const day = localDate(a.starts_at, zone);
              const d = formatDay(day, lang);
              return (
                <tr key={a.id}>
                  <th scope="row">
                    <span className="pr-date">
                      {d.weekday} {d.day} {d.month} {day.slice(0, 4)}
                    </span>{' '}
                    <span className="muted">
                      {formatTime(a.starts_at, zone, lang)}–{formatTime(a.ends_at, zone, lang)}
                    </span>
                  </th>
                  <td>{services.data?.get(a.service_id) ?? '—'}</td>
                  <td>{(a.specialist_id && specialists.data?.get(a.specialist_id)) || '—'}</td>
                  <td>
                    <span className={`badge status-${a.status}`}>{t(`appt.status.${a.status}` as MessageKey)}</span>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    );
  return (
    <div className="stack">
      {list.data && list.data.pagination.total > rows.length && (
        <p className="muted small">{t('patients.appts.latest', { n: rows.length, total: list.data.pagination.total })}</p>
      )}
      {table(t('appt.upcoming'), upcoming)}
      {table(t('appt.past'), past)}
    </div>
  );
}
