import { api, formatDateTime, type MessageKey, messages, Spinner, useI18n } from '@clinic/ui';
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { Empty, recordZone, type SectionProps, ServerError } from '../parts.tsx';

const PAGE = 50;

/**
 * Who read this record (GET /v1/audit-logs/access?patient_id=, audit_log.view_org): one line per read of the
 * record, its profile, forms, files or consents, newest first, with the reader's email from the members'
 * picker (GET /v1/users?ids=) when the caller may read the directory.
 */
export function AccessLogSection({ patientId, can }: SectionProps) {
  const { t, lang } = useI18n();
  const zone = recordZone();
  const [page, setPage] = useState(1);
  const log = useQuery({
    queryKey: ['patient-access', patientId, page],
    queryFn: async () =>
      (await api.listAccessLogs({ query: { patient_id: patientId, page: String(page), limit: String(PAGE), sort: '-occurred_at' } })).data,
  });
  const actors = [...new Set((log.data?.data ?? []).flatMap((e) => (e.actor_user_id ? [e.actor_user_id] : [])))].sort();
  const users = useQuery({
    queryKey: ['users', actors],
    enabled: actors.length > 0 && can('organizations.view_directory'),
    queryFn: async () =>
      new Map((await api.listUsers({ query: { ids: actors.join(','), limit: '50' } })).data.data.map((u) => [u.id, u.email])),
    retry: false,
  });
  // An action the app has no words for yet is shown by its code, never hidden.
  const action = (code: string) => {
    const key = `patients.access.action.${code.replaceAll('.', '_')}` as MessageKey;
    return key in messages.en ? t(key) : code;
  };
  if (log.isPending) return <Spinner />;
  if (log.isError) return <ServerError error={log.error} />;
  const { data, pagination } = log.data;
  if (!data.length) return <Empty>{t('patients.access.none')}</Empty>;
  const pages = Math.max(1, Math.ceil(pagination.total / PAGE));
  return (
    <div className="card pr-card">
      <h2>{t('patients.access.title')}</h2>
      <p className="muted small">{t('patients.access.lead', { n: pagination.total })}</p>
      <table className="data-table pr-table">
        <caption className="visually-hidden">{t('patients.access.title')}</caption>
        <thead>
          <tr>
            <th scope="col">{t('patients.access.when')}</th>
            <th scope="col">{t('patients.access.who')}</th>
            <th scope="col">{t('patients.access.what')}</th>
            <th scope="col">{t('patients.access.context')}</th>
          </tr>
        </thead>
        <tbody>
          {data.map((e) => (
            <tr key={e.id}>
              <th scope="row">{formatDateTime(e.occurred_at, zone, lang)}</th>
              <td>{(e.actor_user_id && users.data?.get(e.actor_user_id)) || e.actor_user_id || '—'}</td>
              <td>{action(e.action)}</td>
              <td>{e.action_context ? <span className="badge badge-warning">{e.action_context.replace('_', ' ')}</span> : '—'}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {pages > 1 && (
        <nav className="button-row pr-pager" aria-label={t('patients.access.pages')}>
          <button type="button" className="button button-secondary" disabled={page <= 1} onClick={() => setPage(page - 1)}>
            {t('patients.prev')}
          </button>
          <span className="muted">{t('patients.pageOf', { page, pages })}</span>
          <button type="button" className="button button-secondary" disabled={page >= pages} onClick={() => setPage(page + 1)}>
            {t('patients.next')}
          </button>
        </nav>
      )}
    </div>
  );
}
