import { createHash } from 'node:crypto';
import type { Database, Queryable } from '@clinic/db';

/** How long a finished archive can be downloaded; issue 5's sweeps delete expired files. */
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
  { name: 'platform_roles', sql: (org) => `select role, granted_at from platform_memberships where user_id = $1 ${org ? 'and false' : ''} order by role` },
  {
    name: 'memberships',
    sql: (org) =>
      `select m.organization_id, o.name as organization_name, r.code as role_code, m.created_at
       from memberships m join organizations o on o.id = m.organization_id join roles r on r.id = m.role_id
       where m.user_id = $1 ${org ? 'and m.organization_id = $2' : ''} order by m.created_at`,
  },
  {
    name: 'patient_records',
    sql: (org) =>
      `select p.id, p.organization_id, o.name as organization_name, p.profile_shared, p.deleted_at, p.created_at
       from patients p join organizations o on o.id = p.organization_id
       where p.user_id = $1 ${org ? 'and p.organization_id = $2' : ''} order by p.created_at`,
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
export async function buildExport(db: Queryable, jobId: string, p: ExportPayload, progress: (pct: number) => Promise<void>): Promise<Buffer> {
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
 * Issue 5 moves this onto the durable job system (retries, stale-job recovery, expiry sweeps).
 */
export function createJobRunner(db: Database, log: Logger, pollMs = 1000): JobRunner {
  let timer: NodeJS.Timeout | null = null;
  let stopped = true;
  let current: Promise<void> | null = null;
  let again = false;

  async function claim(): Promise<{ id: string; payload: ExportPayload } | null> {
    const { rows } = await db.query<{ id: string; payload: ExportPayload }>(
      `update jobs set status = 'running', attempts = attempts + 1, progress = 1
       where id = (select id from jobs where status = 'queued' and kind = 'gdpr_export' order by created_at limit 1 for update skip locked)
       returning id, payload`,
    );
    return rows[0] ?? null;
  }

  async function runOne(job: { id: string; payload: ExportPayload }): Promise<void> {
    try {
      const file = await buildExport(db, job.id, job.payload, async (pct) => {
        await db.query('update jobs set progress = $2 where id = $1', [job.id, pct]);
      });
      const result = { file_name: `gdpr-export-${job.id}.json`, bytes: file.length, sha256: createHash('sha256').update(file).digest('hex') };
      await db.query(
        `update jobs set status = 'done', progress = 100, file = $2, result = $3, result_path = $4,
                expires_at = now() + make_interval(days => $5) where id = $1`,
        [job.id, file, JSON.stringify(result), `jobs/${job.id}/file`, EXPORT_TTL_DAYS],
      );
      log.info({ jobId: job.id, bytes: file.length }, 'gdpr export done');
    } catch (err) {
      log.error({ err, jobId: job.id }, 'gdpr export failed');
      await db.query(`update jobs set status = 'failed', error = $2 where id = $1`, [job.id, 'The export failed; request a new one.']).catch(() => {});
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
