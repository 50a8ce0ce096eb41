import { api, formatDateTime, idempotencyKey, Notice, purposeName, Spinner, useI18n } from '@clinic/ui';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useId, useState } from 'react';
import { PageHead, ServerError } from '../common.tsx';

const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;

interface Version {
  version: number;
  published_at: string | Date;
  body_translations: Record<string, string>;
}
interface Purpose {
  code: string;
  scope: 'platform' | 'org';
  name: string;
  description: string;
  legal_basis: string;
  required: boolean;
  organization_id: string | null;
  platform_version: Version | null;
}

/**
 * Platform consent purposes (the catalog without an organization in scope) with their current platform
 * version, and publishing the next one. A new version of a required purpose asks everyone again (412).
 */
export function Consents() {
  const { t, lang } = useI18n();
  const [editing, setEditing] = useState<string | null>(null);
  const [published, setPublished] = useState<string | null>(null);
  const list = useQuery({
    queryKey: ['consent-purposes'],
    queryFn: async () => (await api.listConsentPurposes()).data.data as unknown as Purpose[],
  });
  return (
    <>
      <PageHead title={t('console.consents.title')} lead={t('console.consents.lead')} />
      <ServerError error={list.error} />
      {published && <Notice kind="success">{published}</Notice>}
      {list.isPending ? (
        <Spinner />
      ) : (
        <ul className="purpose-list">
          {(list.data ?? [])
            .filter((p) => p.organization_id === null)
            .map((p) => (
              <li key={p.code} className="card purpose">
                <div className="purpose-head">
                  <div>
                    <h2>{purposeName(lang, p.code, p.name)}</h2>
                    <p className="muted small">
                      <code>{p.code}</code> · {t(p.scope === 'platform' ? 'console.consents.scopePlatform' : 'console.consents.scopeOrg')} ·{' '}
                      {p.legal_basis}
                      {p.required && <> · {t('console.consents.required')}</>}
                    </p>
                  </div>
                  <div className="purpose-version">
                    {p.platform_version ? (
                      <>
                        <span className="version">{t('console.consents.version', { n: p.platform_version.version })}</span>
                        <span className="muted small">{formatDateTime(p.platform_version.published_at, zone, lang)}</span>
                      </>
                    ) : (
                      <span className="muted">{t('console.consents.unpublished')}</span>
                    )}
                    <button
                      type="button"
                      className="button button-secondary button-small"
                      aria-expanded={editing === p.code}
                      onClick={() => setEditing(editing === p.code ? null : p.code)}
                    >
                      {t('console.consents.newVersion')}
                      <span className="visually-hidden"> — {purposeName(lang, p.code, p.name)}</span>
                    </button>
                  </div>
                </div>
                {editing === p.code && (
                  <Publish
                    purpose={p}
                    onDone={(n) => {
                      setEditing(null);
                      setPublished(t('console.consents.published', { name: purposeName(lang, p.code, p.name), n }));
                    }}
                  />
                )}
              </li>
            ))}
        </ul>
      )}
    </>
  );
}

function Publish({ purpose, onDone }: { purpose: Purpose; onDone: (version: number) => void }) {
  const { t } = useI18n();
  const qc = useQueryClient();
  const [en, setEn] = useState(purpose.platform_version?.body_translations.en ?? '');
  const [ro, setRo] = useState(purpose.platform_version?.body_translations.ro ?? '');
  const [key] = useState(idempotencyKey);
  const ids = { en: useId(), ro: useId() };
  const publish = useMutation({
    mutationFn: async () =>
      (
        await api.publishPlatformConsentVersion({
          params: { code: purpose.code },
          body: { body_translations: { en: en.trim(), ...(ro.trim() ? { ro: ro.trim() } : {}) } },
          headers: { 'idempotency-key': key },
        })
      ).data.data,
    onSuccess: async (v) => {
      await qc.invalidateQueries({ queryKey: ['consent-purposes'] });
      onDone(v.version);
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    publish.mutate();
  };
  return (
    <form className="publish" onSubmit={submit}>
      {purpose.required && <Notice kind="warning">{t('console.consents.reaskWarning')}</Notice>}
      <div className="form-grid form-grid-2">
        <div className="field">
          <label htmlFor={ids.en}>{t('console.consents.textEn')}</label>
          <textarea id={ids.en} lang="en" required value={en} onChange={(e) => setEn(e.target.value)} rows={6} />
        </div>
        <div className="field">
          <label htmlFor={ids.ro}>{t('console.consents.textRo')}</label>
          <textarea id={ids.ro} lang="ro" value={ro} onChange={(e) => setRo(e.target.value)} rows={6} />
        </div>
      </div>
      <ServerError error={publish.error} />
      <button type="submit" className="button" disabled={publish.isPending}>
        {t('console.consents.publish')}
      </button>
    </form>
  );
}
