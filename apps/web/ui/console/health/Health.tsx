import { api, formatDateTime, type MessageKey, Spinner, useI18n } from '@clinic/ui';
import { useQuery } from '@tanstack/react-query';
import { PageHead, ServerError, StatusPill, type Tone } from '../common.tsx';

const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
const toneOf = (s: string): Tone =>
  s === 'up' || s === 'healthy' ? 'ok' : s === 'degraded' ? 'warn' : s === 'not_configured' ? 'off' : 'bad';

/** Every service through GET /v1/admin/system-status, polled every 15 s while the screen is open. */
export function Health() {
  const { t, lang } = useI18n();
  const status = useQuery({
    queryKey: ['system-status'],
    queryFn: async () => (await api.getSystemStatus()).data.data,
    refetchInterval: 15_000,
  });
  const info = useQuery({ queryKey: ['system-info'], queryFn: async () => (await api.getSystemInfo()).data.data });
  return (
    <>
      <PageHead
        title={t('console.health.title')}
        lead={t('console.health.lead')}
        actions={
          <button type="button" className="button button-secondary" onClick={() => void status.refetch()} disabled={status.isFetching}>
            {t('console.health.refresh')}
          </button>
        }
      />
      <ServerError error={status.error} />
      {status.isPending ? (
        <Spinner />
      ) : status.data ? (
        <>
          <div className={`overall overall-${toneOf(status.data.status)}`} role="status">
            <StatusPill tone={toneOf(status.data.status)}>{t(`console.overall.${status.data.status}` as MessageKey)}</StatusPill>
            <span className="muted small">
              {t('console.health.checkedAt', { time: formatDateTime(status.data.checked_at, zone, lang) })}
            </span>
          </div>
          <ul className="service-grid">
            {status.data.services.map((s) => (
              <li key={s.name} className="card service-card">
                <div className="service-head">
                  <h2>{t(`console.service.${s.name}` as MessageKey)}</h2>
                  <StatusPill tone={toneOf(s.status)}>{t(`console.state.${s.status}` as MessageKey)}</StatusPill>
                </div>
                <dl className="metrics">
                  {s.latency_ms !== null && (
                    <div>
                      <dt>{t('console.health.latency')}</dt>
                      <dd>{t('console.health.ms', { n: s.latency_ms })}</dd>
                    </div>
                  )}
                  {Object.entries(s.detail)
                    .filter(([, v]) => v !== null && typeof v !== 'object')
                    .map(([k, v]) => (
                      <div key={k}>
                        <dt>{t(`console.metric.${k}` as MessageKey)}</dt>
                        <dd>{String(v)}</dd>
                      </div>
                    ))}
                </dl>
                {s.error && <p className="error-text small">{s.error}</p>}
              </li>
            ))}
          </ul>
        </>
      ) : null}
      {info.data && (
        <section className="card spaced" aria-labelledby="sysinfo">
          <h2 id="sysinfo">{t('console.health.systemInfo')}</h2>
          <dl className="facts">
            <div>
              <dt>{t('console.health.product')}</dt>
              <dd>{`${info.data.product_name} ${info.data.version}`}</dd>
            </div>
            <div>
              <dt>{t('console.health.manufacturer')}</dt>
              <dd>{info.data.manufacturer_name}</dd>
            </div>
            <div>
              <dt>{t('console.health.support')}</dt>
              <dd>{info.data.support_email}</dd>
            </div>
          </dl>
        </section>
      )}
    </>
  );
}
