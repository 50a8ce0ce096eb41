import { api, Notice, Spinner, useI18n } from '@clinic/ui';
import { useMutation, useQuery } from '@tanstack/react-query';
import { type FormEvent, useId, useState } from 'react';
import { PageHead, ServerError, StatusPill } from '../common.tsx';

/**
 * The audit chain's verification (POST /v1/admin/audit-chains/verify): pick the platform's chain or an
 * organization's, run the walk, and read the verdict: intact with the count of entries, or the first
 * broken link and why.
 */
export function AuditChain() {
  const { t } = useI18n();
  const [chain, setChain] = useState('platform');
  const id = useId();
  const orgs = useQuery({
    queryKey: ['organizations', ''],
    queryFn: async () => (await api.listOrganizations({ query: { limit: '100' } })).data,
  });
  const verify = useMutation({
    mutationFn: async (which: string) =>
      (await api.verifyAuditChain({ body: { organization_id: which === 'platform' ? null : which } })).data.data,
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    verify.mutate(chain);
  };
  const r = verify.data;
  const name = (c: string) => (c === 'platform' ? t('console.audit.platform') : (orgs.data?.data.find((o) => o.id === c)?.name ?? c));
  return (
    <>
      <PageHead title={t('console.audit.title')} lead={t('console.audit.lead')} />
      <form className="card toolbar-form" onSubmit={submit}>
        <div className="field">
          <label htmlFor={id}>{t('console.audit.chain')}</label>
          <select id={id} value={chain} onChange={(e) => setChain(e.target.value)}>
            <option value="platform">{t('console.audit.platform')}</option>
            {(orgs.data?.data ?? []).map((o) => (
              <option key={o.id} value={o.id}>
                {o.name}
              </option>
            ))}
          </select>
        </div>
        <button type="submit" className="button" disabled={verify.isPending}>
          {t('console.audit.run')}
        </button>
      </form>
      <ServerError error={verify.error} />
      {verify.isPending && <Spinner label={t('console.audit.running')} />}
      {r && !verify.isPending && (
        <section className={`card verdict verdict-${r.ok ? 'ok' : 'bad'}`} aria-labelledby="verdict-title" aria-live="polite">
          <div className="service-head">
            <h2 id="verdict-title">{name(r.chain)}</h2>
            <StatusPill tone={r.ok ? 'ok' : 'bad'}>{r.ok ? t('console.audit.intact') : t('console.audit.broken')}</StatusPill>
          </div>
          {r.ok ? (
            <p>{t('console.audit.intactBody', { n: r.checked })}</p>
          ) : (
            <Notice kind="error">
              {t('console.audit.brokenBody', { seq: r.broken?.chain_seq ?? '?', n: r.checked })} {r.broken?.reason}
            </Notice>
          )}
          {r.from && <p className="muted small">{t('console.audit.fromCheckpoint', { seq: r.from.cut_seq })}</p>}
        </section>
      )}
    </>
  );
}
