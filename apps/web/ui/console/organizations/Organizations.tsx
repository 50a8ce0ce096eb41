import { api, DataTable, formatDateTime, idempotencyKey, Spinner, useI18n } from '@clinic/ui';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useId, useState } from 'react';
import { FormActions, PageHead, ServerError } from '../common.tsx';
import { hrefOf, linkProps, navigate } from '../router.ts';

const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;

/** Every organization (a superadmin's GET /v1/organizations lists all), searchable, and a form to create one. */
export function Organizations() {
  const { t, lang } = useI18n();
  const [q, setQ] = useState('');
  const [creating, setCreating] = useState(false);
  const list = useQuery({
    queryKey: ['organizations', q],
    queryFn: async () => (await api.listOrganizations({ query: { limit: '100', ...(q.trim() ? { q: q.trim() } : {}) } })).data,
  });
  const searchId = useId();
  return (
    <>
      <PageHead
        title={t('console.orgs.title')}
        lead={t('console.orgs.lead')}
        actions={
          <button type="button" className="button" onClick={() => setCreating((v) => !v)} aria-expanded={creating}>
            {t('console.orgs.new')}
          </button>
        }
      />
      {creating && <CreateOrganization onDone={() => setCreating(false)} />}
      <div className="toolbar">
        <label htmlFor={searchId} className="visually-hidden">
          {t('console.orgs.search')}
        </label>
        <input id={searchId} type="search" placeholder={t('console.orgs.search')} value={q} onChange={(e) => setQ(e.target.value)} />
        {list.data && <span className="muted small">{t('console.orgs.count', { n: list.data.pagination.total })}</span>}
      </div>
      <ServerError error={list.error} />
      {list.isPending ? (
        <Spinner />
      ) : list.data ? (
        <DataTable
          caption={t('console.orgs.title')}
          captionHidden
          rows={list.data.data}
          rowKey={(o) => o.id}
          empty={t('console.orgs.none')}
          columns={[
            {
              key: 'name',
              header: t('console.orgs.name'),
              cell: (o) => (
                <a className="strong-link" {...linkProps(hrefOf({ screen: 'organizations', id: o.id }))}>
                  {o.name}
                </a>
              ),
            },
            { key: 'slug', header: t('console.orgs.slug'), cell: (o) => <code>{o.slug}</code> },
            { key: 'lang', header: t('console.orgs.language'), cell: (o) => o.language_code },
            { key: 'created', header: t('console.orgs.created'), cell: (o) => formatDateTime(o.created_at, zone, lang), align: 'end' },
          ]}
        />
      ) : null}
    </>
  );
}

function CreateOrganization({ onDone }: { onDone: () => void }) {
  const { t } = useI18n();
  const qc = useQueryClient();
  const [name, setName] = useState('');
  const [slug, setSlug] = useState('');
  const [slugTouched, setSlugTouched] = useState(false);
  const [language, setLanguage] = useState<'en' | 'ro'>('en');
  const [key] = useState(idempotencyKey);
  const ids = { name: useId(), slug: useId(), lang: useId() };
  const create = useMutation({
    mutationFn: async () =>
      (await api.createOrganization({ body: { name: name.trim(), slug, language_code: language }, headers: { 'idempotency-key': key } }))
        .data.data,
    onSuccess: async (org) => {
      await qc.invalidateQueries({ queryKey: ['organizations'] });
      onDone();
      navigate(hrefOf({ screen: 'organizations', id: org.id }));
    },
  });
  const suggest = (n: string) =>
    n
      .toLowerCase()
      .normalize('NFD')
      .replace(/[\u0300-\u036f]/g, '')
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 63);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  const fieldError = (f: string) => {
    const err = create.error as { fields?: Record<string, string> } | null;
    return err?.fields?.[f];
  };
  return (
    <form className="card create-form" onSubmit={submit} aria-labelledby="create-org-title">
      <h2 id="create-org-title">{t('console.orgs.createTitle')}</h2>
      <div className="form-grid">
        <div className="field">
          <label htmlFor={ids.name}>{t('console.orgs.name')}</label>
          <input
            id={ids.name}
            required
            maxLength={200}
            value={name}
            onChange={(e) => {
              setName(e.target.value);
              if (!slugTouched) setSlug(suggest(e.target.value));
            }}
          />
        </div>
        <div className="field">
          <label htmlFor={ids.slug}>{t('console.orgs.slug')}</label>
          <input
            id={ids.slug}
            required
            pattern="[a-z0-9]([a-z0-9\-]{0,61}[a-z0-9])?"
            value={slug}
            aria-describedby={`${ids.slug}-hint`}
            aria-invalid={fieldError('slug') ? true : undefined}
            onChange={(e) => {
              setSlugTouched(true);
              setSlug(e.target.value.toLowerCase());
            }}
          />
          <span className="muted small" id={`${ids.slug}-hint`}>
            {t('console.orgs.slugHint', { host: `${slug || 'slug'}.${location.hostname}` })}
          </span>
        </div>
        <div className="field">
          <label htmlFor={ids.lang}>{t('console.orgs.language')}</label>
          <select id={ids.lang} value={language} onChange={(e) => setLanguage(e.target.value as 'en' | 'ro')}>
            <option value="en">{t('lang.en')}</option>
            <option value="ro">{t('lang.ro')}</option>
          </select>
        </div>
      </div>
      <FormActions error={create.error} pending={create.isPending} submit={t('console.orgs.create')} onCancel={onDone} />
    </form>
  );
}
