import { api, DataTable, formatDateTime, Spinner, useI18n } from '@clinic/ui';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { type ReactNode, useCallback, useState } from 'react';
import { ElevationForm, elevationOf, SessionBar } from '../break-glass/Elevation.tsx';
import { forgetSession, type OpenSession, recallSession } from '../break-glass/session-store.ts';
import { PageHead, ServerError } from '../common.tsx';
import { linkProps } from '../router.ts';

const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
type Tab = 'patients' | 'audit';

/**
 * One organization: its facts, and its identifiable data (patients, the full audit log) behind
 * break-glass. The console asks for the data; a refusal's elevation metadata becomes the form, and the
 * session's countdown sits above the data it unlocked.
 */
export function OrganizationDetails({ orgId }: { orgId: string }) {
  const { t, lang } = useI18n();
  const [tab, setTab] = useState<Tab>('patients');
  const org = useQuery({
    queryKey: ['organization', orgId],
    queryFn: async () => (await api.getOrganization({ params: { id: orgId } })).data.data,
  });
  if (org.isPending) return <Spinner />;
  if (org.error) return <ServerError error={org.error} />;
  const o = org.data;
  return (
    <>
      <p className="crumbs">
        <a {...linkProps('/console/organizations')}>{t('console.orgs.title')}</a> <span aria-hidden="true">/</span> {o.name}
      </p>
      <PageHead title={o.name} />
      <dl className="facts card">
        <div>
          <dt>{t('console.orgs.slug')}</dt>
          <dd>
            <code>{o.slug}</code>
          </dd>
        </div>
        <div className="wide">
          <dt>{t('console.orgs.address')}</dt>
          <dd>
            <a href={`${location.protocol}//${o.slug}.${location.host}/`}>{`${o.slug}.${location.host}`}</a>
          </dd>
        </div>
        <div>
          <dt>{t('console.orgs.language')}</dt>
          <dd>{o.language_code}</dd>
        </div>
        <div>
          <dt>{t('console.orgs.created')}</dt>
          <dd>{formatDateTime(o.created_at, zone, lang)}</dd>
        </div>
        <div>
          <dt>{t('console.orgs.id')}</dt>
          <dd>
            <code className="small">{o.id}</code>
          </dd>
        </div>
      </dl>
      <div className="tabs" role="tablist" aria-label={t('console.orgs.dataTabs')}>
        {(['patients', 'audit'] as Tab[]).map((k) => (
          <button
            key={k}
            type="button"
            role="tab"
            id={`tab-${k}`}
            aria-controls={`panel-${k}`}
            aria-selected={tab === k}
            tabIndex={tab === k ? 0 : -1}
            className="tab"
            onClick={() => setTab(k)}
            onKeyDown={(e) => {
              if (e.key === 'ArrowRight' || e.key === 'ArrowLeft') {
                const next: Tab = tab === 'patients' ? 'audit' : 'patients';
                setTab(next);
                document.getElementById(`tab-${next}`)?.focus();
              }
            }}
          >
            {k === 'patients' ? t('console.bg.patients') : t('console.bg.audit')}
          </button>
        ))}
      </div>
      <div role="tabpanel" id={`panel-${tab}`} aria-labelledby={`tab-${tab}`} className="tab-panel">
        {tab === 'patients' ? <Patients orgId={o.id} orgName={o.name} /> : <AuditLog orgId={o.id} orgName={o.name} />}
      </div>
    </>
  );
}

/** A console read behind break-glass: the data under its session bar, or the elevation form from the refusal. */
function useGuarded<T>(orgId: string, scope: string, what: string, fetcher: () => Promise<T>) {
  const qc = useQueryClient();
  const [session, setSession] = useState<OpenSession | null>(() => recallSession(orgId, scope));
  const query = useQuery({ queryKey: ['console', what, orgId], queryFn: fetcher });
  const onOpened = (s: OpenSession) => {
    setSession(s);
    void qc.invalidateQueries({ queryKey: ['console', what, orgId] });
  };
  const onExpired = useCallback(() => {
    forgetSession(orgId, scope);
    setSession(null);
    void qc.invalidateQueries({ queryKey: ['console', what, orgId] });
  }, [orgId, scope, what, qc]);
  return { query, session, onOpened, onExpired, elevation: elevationOf(query.error) };
}

/** What every guarded read shows: a spinner, the elevation form from the refusal, the server's error, or the data under the session bar. */
function Guarded<T>({
  guard: g,
  orgName,
  children,
}: {
  guard: ReturnType<typeof useGuarded<T>>;
  orgName: string;
  children: (data: T) => ReactNode;
}) {
  if (g.query.isPending) return <Spinner />;
  if (g.elevation) return <ElevationForm {...g.elevation} orgName={orgName} onOpened={g.onOpened} />;
  if (g.query.error) return <ServerError error={g.query.error} />;
  return (
    <>
      {g.session && <SessionBar session={g.session} onExpired={g.onExpired} />}
      {children(g.query.data)}
    </>
  );
}

function Patients({ orgId, orgName }: { orgId: string; orgName: string }) {
  const { t, lang } = useI18n();
  const [open, setOpen] = useState<{ id: string; email: string } | null>(null);
  const g = useGuarded(
    orgId,
    'patient_list',
    'patients',
    async () => (await api.consoleListPatients({ params: { org_id: orgId }, query: { limit: '100' } })).data,
  );
  return (
    <>
      <Guarded guard={g} orgName={orgName}>
        {(data) => (
          <DataTable
            caption={t('console.bg.patientsCaption', { n: data.pagination.total })}
            rows={data.data}
            rowKey={(p) => p.id}
            empty={t('console.bg.noPatients')}
            columns={[
              {
                key: 'email',
                header: t('console.bg.email'),
                cell: (p) => (
                  <button
                    type="button"
                    className="button-link"
                    aria-expanded={open?.id === p.id}
                    onClick={() => setOpen(open?.id === p.id ? null : p)}
                  >
                    {p.email}
                  </button>
                ),
              },
              {
                key: 'shared',
                header: t('console.bg.profile'),
                cell: (p) => (p.profile_shared ? t('console.bg.shared') : t('console.bg.notShared')),
              },
              {
                key: 'state',
                header: t('console.bg.state'),
                cell: (p) => (p.deleted_at ? t('console.bg.deleted') : t('console.bg.activeRecord')),
              },
              { key: 'created', header: t('console.orgs.created'), cell: (p) => formatDateTime(p.created_at, zone, lang), align: 'end' },
            ]}
          />
        )}
      </Guarded>
      {open && <PatientRecord key={open.id} orgId={orgId} orgName={orgName} patientId={open.id} />}
    </>
  );
}

/** One patient's record: its own scope (patient_detail), so its own refusal and session. */
function PatientRecord({ orgId, orgName, patientId }: { orgId: string; orgName: string; patientId: string }) {
  const { t, lang } = useI18n();
  const g = useGuarded(
    orgId,
    'patient_detail',
    `patient:${patientId}`,
    async () => (await api.consoleGetPatient({ params: { org_id: orgId, patient_id: patientId } })).data.data,
  );
  return (
    <section className="patient-record" aria-labelledby="patient-record-title">
      <h2 id="patient-record-title">{t('console.bg.record')}</h2>
      <Guarded guard={g} orgName={orgName}>
        {(data) => (
          <dl className="facts card">
            <div className="wide">
              <dt>{t('console.bg.email')}</dt>
              <dd>{data.email}</dd>
            </div>
            <div>
              <dt>{t('console.orgs.language')}</dt>
              <dd>{data.preferred_language ?? '—'}</dd>
            </div>
            <div>
              <dt>{t('console.bg.lastActivity')}</dt>
              <dd>{data.last_activity ? formatDateTime(data.last_activity, zone, lang) : '—'}</dd>
            </div>
            <div>
              <dt>{t('console.orgs.created')}</dt>
              <dd>{formatDateTime(data.created_at, zone, lang)}</dd>
            </div>
          </dl>
        )}
      </Guarded>
    </section>
  );
}

function AuditLog({ orgId, orgName }: { orgId: string; orgName: string }) {
  const { t, lang } = useI18n();
  const g = useGuarded(
    orgId,
    'audit_full',
    'audit',
    async () => (await api.consoleListAuditLogs({ params: { org_id: orgId }, query: { limit: '50' } })).data,
  );
  return (
    <Guarded guard={g} orgName={orgName}>
      {(data) => (
        <DataTable
          caption={t('console.bg.auditCaption', { n: data.pagination.total })}
          rows={data.data}
          rowKey={(e) => e.id}
          empty={t('console.bg.noAudit')}
          columns={[
            { key: 'when', header: t('console.bg.when'), cell: (e) => formatDateTime(e.created_at, zone, lang) },
            { key: 'action', header: t('console.bg.action'), cell: (e) => <code>{e.action}</code> },
            {
              key: 'context',
              header: t('console.bg.context'),
              cell: (e) =>
                e.action_context === 'break_glass' ? (
                  <span className="pill pill-warn">{t('console.bg.underBreakGlass')}</span>
                ) : (
                  e.action_context
                ),
            },
            { key: 'entity', header: t('console.bg.entity'), cell: (e) => e.entity_type },
          ]}
        />
      )}
    </Guarded>
  );
}
