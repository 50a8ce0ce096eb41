import { api, DataTable, formatDateTime, type MessageKey, Spinner, useI18n } from '@clinic/ui';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useId, useState } from 'react';
import { FormActions, PageHead, ServerError, StatusPill, type Tone } from '../common.tsx';

const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;

/** The credential fields of each capability (spec 2.11): typed in, sent once, never shown again. */
const CREDENTIAL_FIELDS: Record<string, string[]> = {
  email: ['access_key_id', 'secret_access_key'],
  storage: ['access_key_id', 'secret_access_key'],
  sms: ['account_sid', 'auth_token'],
  auth: ['secret_key', 'publishable_key', 'webhook_secret'],
};

const toneOf = (status: string): Tone => (status === 'active' ? 'ok' : status === 'error' ? 'bad' : 'off');

interface ProviderRow {
  id: string;
  capability: string;
  provider: string;
  organization_id: string | null;
  credentials: Record<string, string> | null;
  credentials_key_id: string | null;
  status: string;
  last_error: string | null;
  last_error_at: string | Date | null;
  last_health_check_at: string | Date | null;
  updated_at: string | Date;
}

/**
 * Platform providers: status, last error and the last health check (the worker pings every row on its
 * schedule), and credential rotation. Credentials are write-only here: the screen never shows a stored
 * value, not even the API's masked one, only that a set is stored and under which master key.
 */
export function Providers() {
  const { t, lang } = useI18n();
  const qc = useQueryClient();
  const [rotating, setRotating] = useState<ProviderRow | null>(null);
  const check = useMutation({
    mutationFn: async (id: string) => (await api.checkPlatformServiceProvider({ params: { id } })).data.data,
    onSuccess: () => qc.invalidateQueries({ queryKey: ['providers'] }),
  });
  const list = useQuery({
    queryKey: ['providers'],
    queryFn: async () => (await api.listPlatformServiceProviders({ query: { limit: '100' } })).data,
  });
  return (
    <>
      <PageHead title={t('console.providers.title')} lead={t('console.providers.lead')} />
      <ServerError error={list.error ?? check.error} />
      {rotating && <Rotate row={rotating} onDone={() => setRotating(null)} />}
      {list.isPending ? (
        <Spinner />
      ) : list.data ? (
        <DataTable
          caption={t('console.providers.title')}
          captionHidden
          rows={list.data.data as unknown as ProviderRow[]}
          rowKey={(r) => r.id}
          empty={t('console.providers.none')}
          columns={[
            {
              key: 'cap',
              header: t('console.providers.capability'),
              cell: (r) => (
                <>
                  <strong>{t(`console.capability.${r.capability}` as MessageKey)}</strong>
                  <div className="muted small">{r.provider}</div>
                </>
              ),
            },
            {
              key: 'scope',
              header: t('console.providers.scope'),
              cell: (r) =>
                r.organization_id ? <code className="small">{r.organization_id.slice(0, 8)}…</code> : t('console.providers.platform'),
            },
            {
              key: 'status',
              header: t('console.providers.status'),
              cell: (r) => <StatusPill tone={toneOf(r.status)}>{t(`console.providerStatus.${r.status}` as MessageKey)}</StatusPill>,
            },
            {
              key: 'error',
              header: t('console.providers.lastError'),
              cell: (r) =>
                r.last_error ? (
                  <>
                    <span className="error-text">{r.last_error}</span>
                    {r.last_error_at && <div className="muted small">{formatDateTime(r.last_error_at, zone, lang)}</div>}
                  </>
                ) : (
                  <span className="muted">—</span>
                ),
            },
            {
              key: 'check',
              header: t('console.providers.lastCheck'),
              cell: (r) =>
                r.last_health_check_at ? formatDateTime(r.last_health_check_at, zone, lang) : t('console.providers.notChecked'),
            },
            {
              key: 'creds',
              header: t('console.providers.credentials'),
              cell: (r) =>
                r.credentials ? (
                  <span>
                    {t('console.providers.stored')}
                    {r.credentials_key_id && (
                      <div className="muted small">{t('console.providers.sealedWith', { key: r.credentials_key_id })}</div>
                    )}
                  </span>
                ) : (
                  <span className="muted">{t('console.providers.noCredentials')}</span>
                ),
            },
            {
              key: 'actions',
              header: <span className="visually-hidden">{t('console.actions')}</span>,
              cell: (r) => (
                <div className="row-actions">
                  <button
                    type="button"
                    className="button button-secondary button-small"
                    onClick={() => check.mutate(r.id)}
                    disabled={check.isPending}
                    aria-label={t('console.providers.checkFor', { name: t(`console.capability.${r.capability}` as MessageKey) })}
                  >
                    {t('console.providers.check')}
                  </button>
                  <button
                    type="button"
                    className="button button-secondary button-small"
                    onClick={() => setRotating(r)}
                    aria-label={t('console.providers.rotateFor', { name: t(`console.capability.${r.capability}` as MessageKey) })}
                  >
                    {t('console.providers.rotate')}
                  </button>
                </div>
              ),
            },
          ]}
        />
      ) : null}
      <p className="muted small spaced">{t('console.providers.rotationNote')}</p>
    </>
  );
}

function Rotate({ row, onDone }: { row: ProviderRow; onDone: () => void }) {
  const { t } = useI18n();
  const qc = useQueryClient();
  const fields = CREDENTIAL_FIELDS[row.capability] ?? [];
  const [values, setValues] = useState<Record<string, string>>({});
  const [status, setStatus] = useState(row.status === 'inactive' ? 'inactive' : 'active');
  const base = useId();
  const save = useMutation({
    mutationFn: async () =>
      (
        await api.updatePlatformServiceProvider({
          params: { id: row.id },
          body: {
            ...(fields.some((f) => values[f]) ? { credentials: values } : {}),
            status: status as 'active',
          },
        })
      ).data.data,
    onSuccess: async () => {
      // The typed secrets leave memory with the form.
      setValues({});
      await qc.invalidateQueries({ queryKey: ['providers'] });
      onDone();
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  const name = t(`console.capability.${row.capability}` as MessageKey);
  return (
    <form className="card create-form" onSubmit={submit} aria-labelledby={`${base}-title`} autoComplete="off">
      <h2 id={`${base}-title`}>{t('console.providers.rotateTitle', { name })}</h2>
      <p className="muted small">{t('console.providers.writeOnly')}</p>
      <div className="form-grid">
        {fields.map((f) => (
          <div className="field" key={f}>
            <label htmlFor={`${base}-${f}`}>{t(`console.cred.${f}` as MessageKey)}</label>
            <input
              id={`${base}-${f}`}
              type="password"
              autoComplete="new-password"
              spellCheck={false}
              required={fields.some((x) => values[x])}
              value={values[f] ?? ''}
              onChange={(e) => setValues((v) => ({ ...v, [f]: e.target.value }))}
            />
          </div>
        ))}
        <div className="field">
          <label htmlFor={`${base}-status`}>{t('console.providers.status')}</label>
          <select id={`${base}-status`} value={status} onChange={(e) => setStatus(e.target.value)}>
            <option value="active">{t('console.providerStatus.active')}</option>
            <option value="inactive">{t('console.providerStatus.inactive')}</option>
          </select>
        </div>
      </div>
      <FormActions error={save.error} pending={save.isPending} submit={t('console.providers.save')} onCancel={onDone} />
    </form>
  );
}
