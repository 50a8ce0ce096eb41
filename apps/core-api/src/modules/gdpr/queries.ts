import type { Queryable } from '@clinic/db';

export interface RestrictionRow {
  id: string;
  user_id: string;
  organization_id: string | null;
  reason: string | null;
  restricted_at: Date;
  restricted_by_principal_id: string;
  lifted_at: Date | null;
  lifted_by_principal_id: string | null;
}

export interface JobRow {
  id: string;
  kind: string;
  status: 'queued' | 'running' | 'done' | 'failed';
  progress: number;
  organization_id: string | null;
  requested_by_principal_id: string;
  payload: { subject_user_id: string; organization_id: string | null };
  result: { file_name: string; bytes: number; sha256: string } | null;
  error: string | null;
  expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

const RESTRICTION_COLUMNS =
  'id, user_id, organization_id, reason, restricted_at, restricted_by_principal_id, lifted_at, lifted_by_principal_id';
const JOB_COLUMNS =
  'id, kind, status, progress, organization_id, requested_by_principal_id, payload, result, error, expires_at, created_at, updated_at';

/** The person behind a patients row (live or not) of the organization in scope; see app.gdpr_patient_user_id. */
export async function gdprPatientUserId(tx: Queryable, patientId: string): Promise<string | null> {
  const { rows } = await tx.query<{ user_id: string | null }>('select app.gdpr_patient_user_id($1) as user_id', [patientId]);
  return rows[0]?.user_id ?? null;
}

export async function userExists(tx: Queryable, userId: string): Promise<boolean> {
  const { rows } = await tx.query<{ ok: boolean }>('select exists (select 1 from users where id = $1) as ok', [userId]);
  return rows[0]!.ok;
}

/** Is processing of this person's data restricted, platform-wide or at the organization (null: platform only)? */
export async function isRestricted(tx: Queryable, userId: string, orgId: string | null): Promise<boolean> {
  const { rows } = await tx.query<{ ok: boolean }>(
    `select exists (select 1 from gdpr_restrictions
       where user_id = $1 and lifted_at is null and (organization_id is null or organization_id = $2)) as ok`,
    [userId, orgId],
  );
  return rows[0]!.ok;
}

export async function activeRestriction(tx: Queryable, userId: string, orgId: string | null): Promise<RestrictionRow | null> {
  const { rows } = await tx.query<RestrictionRow>(
    `select ${RESTRICTION_COLUMNS} from gdpr_restrictions
     where user_id = $1 and organization_id is not distinct from $2 and lifted_at is null for update`,
    [userId, orgId],
  );
  return rows[0] ?? null;
}

/** Inserts an active restriction; null when a concurrent request inserted one first. */
export async function insertRestriction(
  tx: Queryable,
  r: { userId: string; orgId: string | null; reason: string | null; by: string },
): Promise<RestrictionRow | null> {
  const { rows } = await tx.query<RestrictionRow>(
    `insert into gdpr_restrictions (user_id, organization_id, reason, restricted_by_principal_id) values ($1, $2, $3, $4)
     on conflict do nothing returning ${RESTRICTION_COLUMNS}`,
    [r.userId, r.orgId, r.reason, r.by],
  );
  return rows[0] ?? null;
}

export async function liftRestriction(tx: Queryable, id: string, by: string): Promise<RestrictionRow> {
  const { rows } = await tx.query<RestrictionRow>(
    `update gdpr_restrictions set lifted_at = now(), lifted_by_principal_id = $2 where id = $1 returning ${RESTRICTION_COLUMNS}`,
    [id, by],
  );
  return rows[0]!;
}

export async function insertExportJob(tx: Queryable, j: { orgId: string | null; by: string; subjectUserId: string }): Promise<JobRow> {
  const { rows } = await tx.query<JobRow>(
    `insert into jobs (kind, organization_id, requested_by_principal_id, payload) values ('gdpr_export', $1, $2, $3) returning ${JOB_COLUMNS}`,
    [j.orgId, j.by, JSON.stringify({ subject_user_id: j.subjectUserId, organization_id: j.orgId })],
  );
  return rows[0]!;
}

/** An export job the caller may see (row-level security: its requester, or gdpr.export_data at its organization). */
export async function findExportJob(tx: Queryable, id: string): Promise<JobRow | null> {
  const { rows } = await tx.query<JobRow>(`select ${JOB_COLUMNS} from jobs where id = $1 and kind = 'gdpr_export'`, [id]);
  return rows[0] ?? null;
}

export async function exportFile(tx: Queryable, id: string): Promise<Buffer | null> {
  const { rows } = await tx.query<{ file: Buffer | Uint8Array | null }>(`select file from jobs where id = $1 and kind = 'gdpr_export'`, [
    id,
  ]);
  const f = rows[0]?.file;
  return f ? Buffer.from(f) : null;
}

/** Claims the oldest queued export (skipping one another instance holds), counting the attempt. */
export async function claimExportJob<P>(db: Queryable): Promise<{ id: string; payload: P } | null> {
  const { rows } = await db.query<{ id: string; payload: P }>(
    `update jobs set status = 'running', attempts = attempts + 1, progress = 1
     where id = (select id from jobs where status = 'queued' and kind = 'gdpr_export' order by created_at limit 1 for update skip locked)
     returning id, payload`,
  );
  return rows[0] ?? null;
}

export async function setExportProgress(db: Queryable, jobId: string, percent: number): Promise<void> {
  await db.query('update jobs set progress = $2 where id = $1', [jobId, percent]);
}

/** Stores the archive with its job; downloadable for `ttlDays`. */
export async function finishExportJob(db: Queryable, jobId: string, file: Buffer, result: object, ttlDays: number): Promise<void> {
  await db.query(
    `update jobs set status = 'done', progress = 100, file = $2, result = $3, result_path = $4,
            expires_at = now() + make_interval(days => $5) where id = $1`,
    [jobId, file, JSON.stringify(result), `jobs/${jobId}/file`, ttlDays],
  );
}

export async function failExportJob(db: Queryable, jobId: string, error: string): Promise<void> {
  await db.query(`update jobs set status = 'failed', error = $2 where id = $1`, [jobId, error]);
}

/** Running exports whose row has not moved for `staleMinutes` lost their runner: queued again, or failed after `maxAttempts`. */
export async function requeueStaleExports(db: Queryable, staleMinutes: number, maxAttempts: number): Promise<{ status: string }[]> {
  const { rows } = await db.query<{ status: string }>(
    `update jobs set status = case when attempts >= $2 then 'failed' else 'queued' end,
            error = case when attempts >= $2 then 'The export failed repeatedly; request a new one.' else error end,
            progress = 0
     where kind = 'gdpr_export' and status = 'running' and updated_at < now() - make_interval(mins => $1)
     returning status`,
    [staleMinutes, maxAttempts],
  );
  return rows;
}

/** Expired archives are emptied; the job row stays. */
export async function emptyExpiredExports(db: Queryable): Promise<number> {
  const { rowCount } = await db.query(`update jobs set file = null where kind = 'gdpr_export' and file is not null and expires_at < now()`);
  return rowCount;
}
