import { createHash } from 'node:crypto';
import type { Database, Queryable } from '@clinic/db';
import { claimExportJob, failExportJob, finishExportJob, setExportProgress } from './queries.ts';

/** How long a finished archive can be downloaded; the worker's sweeps delete expired files. */
export const EXPORT_TTL_DAYS = 7;

/**
 * The sections of an export archive, in order: each is one query, run as the owner (the job runs
 * outside any request); `org` limits a clinic's export to what that clinic holds.
 */
const SECTIONS: { name: string; sql: (org: boolean) => string }[] = [
  {
    name: 'user',
    sql: () =>
      `select id, email, kind, confirmed, preferred_language, current_organization_id, last_activity, created_at, updated_at
       from users where id = $1`,
  },
  {
    name: 'platform_roles',
    sql: (org) => `select role, granted_at from platform_memberships where user_id = $1 ${org ? 'and false' : ''} order by role`,
  },
  {
    name: 'memberships',
    sql: (org) =>
      `select m.organization_id, o.name as organization_name, r.code as role_code, m.created_at
       from memberships m join organizations o on o.id = m.organization_id join roles r on r.id = m.role_id
       where m.user_id = $1 ${org ? 'and m.organization_id = $2' : ''} order by m.created_at`,
  },
  // Records and forms. A clinic's export (org) is handed to its controller, which answers
  // the request and applies any exemption itself: it holds everything, staff notes and private fields
  // included. The person's own export follows spec 5.8 as the API does: staff notes, private fields
  // and the principals who created or signed forms are left out (docs/decisions.md).
  {
    name: 'patient_records',
    sql: (org) =>
      `select p.id, p.organization_id, o.name as organization_name, p.first_name, p.last_name,
              to_char(p.date_of_birth, 'YYYY-MM-DD') as date_of_birth, p.phone, ${org ? 'p.notes,' : ''}
              p.profile_shared, p.deleted_at, p.created_at, p.updated_at
       from patients p join organizations o on o.id = p.organization_id
       where p.user_id = $1 ${org ? 'and p.organization_id = $2' : ''} order by p.created_at`,
  },
  {
    name: 'specialist_profiles',
    sql: (org) =>
      `select s.id, s.organization_id, o.name as organization_name, s.display_name, s.title, s.bio, s.contact_email, s.contact_phone,
              s.deleted_at, s.created_at, s.updated_at
       from specialists s join organizations o on o.id = s.organization_id
       where s.user_id = $1 ${org ? 'and s.organization_id = $2' : ''} order by s.created_at`,
  },
  {
    // Values are stored by custom field id; each is named by the key and label of the field's latest
    // published version (what the API shows).
    name: 'custom_field_values',
    sql: (org) =>
      `select r.record_type, r.record_id, r.organization_id, e.key as custom_field_id, v.fields_snapshot->>'key' as key,
              v.fields_snapshot->>'label' as label, coalesce((v.fields_snapshot->>'private')::boolean, false) as private, e.value
       from (select 'patient' as record_type, id as record_id, organization_id, custom_field_values as cfv, created_at from patients where user_id = $1
             union all
             select 'specialist', id, organization_id, custom_field_values, created_at from specialists where user_id = $1) r
       cross join lateral jsonb_each(r.cfv) e
       left join lateral (select cv.fields_snapshot from custom_field_versions cv
                          where cv.custom_field_id = case when e.key ~ '^[0-9a-f-]{36}$' then e.key::uuid end
                          order by cv.version desc limit 1) v on true
       where true ${org ? 'and r.organization_id = $2' : "and not coalesce((v.fields_snapshot->>'private')::boolean, false)"}
       order by r.created_at, r.record_id, key`,
  },
  {
    name: 'forms',
    sql: (org) =>
      `select f.id, f.organization_id, f.patient_id, f.form_template_id, f.template_version, f.title, f.status,
              ${org ? 'f."values"' : `f."values" - coalesce((select array_agg(x.key) from form_field_snapshots x where x.form_id = f.id and x.private), '{}'::text[])`} as "values",
              (select coalesce(jsonb_agg(jsonb_build_object('key', x.key, 'label', x.label, 'field_type', x.field_type, 'options', x.options,
                                                            'required', x.required, 'private', x.private, 'custom_field_id', x.custom_field_id,
                                                            'version', x.version) order by x.position), '[]'::jsonb)
               from form_field_snapshots x where x.form_id = f.id ${org ? '' : 'and not x.private'}) as fields,
              ${org ? 'f.created_by_principal_id, f.signed_by_principal_id,' : ''} f.signed_at, f.deleted_at, f.created_at, f.updated_at
       from forms f join patients p on p.id = f.patient_id
       where p.user_id = $1 ${org ? 'and f.organization_id = $2' : ''} order by f.created_at, f.id`,
  },
  {
    // Metadata only: the bytes stay in the asset store (GET /v1/forms/{id}/files/{fileId}).
    name: 'form_files',
    sql: (org) =>
      `select ff.id, ff.form_id, ff.organization_id, ff.filename, ff.content_type, ff.size_bytes, ff.sha256, ff.created_at
       from form_files ff join forms f on f.id = ff.form_id join patients p on p.id = f.patient_id
       where p.user_id = $1 ${org ? 'and ff.organization_id = $2' : ''} order by ff.created_at, ff.id`,
  },
  {
    name: 'consent_ledger',
    sql: (org) =>
      `select id, organization_id, purpose_code, purpose_version, source, source_form_id, granted_at, granted_by_principal_id,
              host(granted_via_ip) as granted_via_ip, withdrawn_at, withdrawn_by_principal_id, withdrawal_reason, created_at
       from consent_ledger where patient_profile_id = $1 ${org ? 'and organization_id = $2' : ''} order by granted_at, id`,
  },
  {
    name: 'processing_restrictions',
    sql: (org) =>
      `select id, organization_id, reason, restricted_at, restricted_by_principal_id, lifted_at, lifted_by_principal_id
       from gdpr_restrictions where user_id = $1 ${org ? 'and organization_id = $2' : ''} order by restricted_at`,
  },
  {
    name: 'audit_entries',
    sql: (org) =>
      `select id, organization_id, actor_user_id, action, entity_type, entity_id, action_context, data, host(ip) as ip, created_at
       from audit_logs a
       where (a.actor_user_id = $1 or a.entity_id = $1 or a.entity_id in (select id from patients where user_id = $1)
              or (a.entity_type = 'consent' and a.data->>'patient_profile_id' = $1::text))
         ${org ? 'and a.organization_id = $2' : ''}
       order by a.created_at, a.id`,
  },
];

export interface ExportPayload {
  subject_user_id: string;
  organization_id: string | null;
}

/**
 * Builds the machine-readable archive of everything the platform holds about the subject (the whole
 * platform, or one clinic's part), reporting progress after each section.
 */
export async function buildExport(
  db: Queryable,
  jobId: string,
  p: ExportPayload,
  progress: (pct: number) => Promise<void>,
): Promise<Buffer> {
  const archive: Record<string, unknown> = {
    format: 'clinic-platform.gdpr-export',
    format_version: 1,
    job_id: jobId,
    generated_at: new Date().toISOString(),
    subject_user_id: p.subject_user_id,
    scope: p.organization_id ? { organization_id: p.organization_id } : 'platform',
  };
  const org = p.organization_id !== null;
  for (const [i, s] of SECTIONS.entries()) {
    const sql = s.sql(org);
    const { rows } = await db.query(sql, sql.includes('$2') ? [p.subject_user_id, p.organization_id] : [p.subject_user_id]);
    archive[s.name] = s.name === 'user' ? (rows[0] ?? null) : rows;
    await progress(Math.floor(((i + 1) / (SECTIONS.length + 1)) * 100));
  }
  return Buffer.from(JSON.stringify(archive, null, 2), 'utf8');
}

interface Logger {
  info(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface JobRunner {
  /** Looks for queued work now (after an enqueue commits) instead of at the next poll. */
  kick(): void;
  start(): void;
  /** Stops polling and waits for the job in progress. */
  stop(): Promise<void>;
}

/**
 * In-process runner of the `jobs` table (kind gdpr_export), started with the API. A job is claimed
 * with FOR UPDATE SKIP LOCKED, so several instances share the queue without running a job twice.
 * The worker's scheduled sweeps (gdpr/jobs.ts) recover stale jobs and delete expired archives.
 */
export function createJobRunner(db: Database, log: Logger, pollMs = 1000): JobRunner {
  let timer: NodeJS.Timeout | null = null;
  let stopped = true;
  let current: Promise<void> | null = null;
  let again = false;

  async function claim(): Promise<{ id: string; payload: ExportPayload } | null> {
    return claimExportJob<ExportPayload>(db);
  }

  async function runOne(job: { id: string; payload: ExportPayload }): Promise<void> {
    try {
      const file = await buildExport(db, job.id, job.payload, async (pct) => {
        await setExportProgress(db, job.id, pct);
      });
      const result = {
        file_name: `gdpr-export-${job.id}.json`,
        bytes: file.length,
        sha256: createHash('sha256').update(file).digest('hex'),
      };
      await finishExportJob(db, job.id, file, result, EXPORT_TTL_DAYS);
      log.info({ jobId: job.id, bytes: file.length }, 'gdpr export done');
    } catch (err) {
      log.error({ err, jobId: job.id }, 'gdpr export failed');
      await failExportJob(db, job.id, 'The export failed; request a new one.').catch(() => {});
    }
  }

  async function drain(): Promise<void> {
    do {
      again = false;
      for (let job = await claim(); job && !stopped; job = await claim()) await runOne(job);
    } while (again && !stopped);
  }

  function tick() {
    if (stopped) return;
    if (current) {
      again = true;
      return;
    }
    current = drain()
      .catch((err: unknown) => log.error({ err }, 'job runner poll failed'))
      .finally(() => {
        current = null;
      });
  }

  return {
    kick: () => setImmediate(tick),
    start() {
      if (!stopped) return;
      stopped = false;
      timer = setInterval(tick, pollMs);
      timer.unref();
      tick();
    },
    async stop() {
      stopped = true;
      if (timer) clearInterval(timer);
      timer = null;
      await current;
    },
  };
}
