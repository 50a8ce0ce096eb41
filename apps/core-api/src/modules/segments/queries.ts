import { isUniqueViolation, type Queryable } from '@clinic/db';
import { type DateRange, errors, type Pagination, type Sort, SqlWhere } from '@clinic/http-kit';
import { pageOf } from '../../platform/page.ts';
import type { Compiled } from './criteria.ts';

export interface SegmentRow {
  id: string;
  organization_id: string;
  name: string;
  description: string | null;
  criteria: Record<string, unknown>;
  current_evaluation_id: string | null;
  evaluated_at: Date | null;
  member_count: number | null;
  created_at: Date;
  updated_at: Date;
}

export interface EvaluationRow {
  id: string;
  organization_id: string;
  segment_id: string;
  status: string;
  total: number;
  processed: number;
  member_count: number;
  error: string | null;
  requested_by_principal_id: string;
  requested_permissions: string[];
  started_at: Date;
  finished_at: Date | null;
}

const S_COLUMNS =
  'id, organization_id, name, description, criteria, current_evaluation_id, evaluated_at, member_count, created_at, updated_at';
const E_COLUMNS =
  'id, organization_id, segment_id, status, total, processed, member_count, error, requested_by_principal_id, requested_permissions, started_at, finished_at';

const nameTaken = () => errors.conflict('segment_name_taken', 'Another segment of this organization has this name.');

export async function insertSegment(
  tx: Queryable,
  orgId: string,
  s: { name: string; description: string | null; criteria: unknown },
  principalId: string,
): Promise<SegmentRow> {
  try {
    const { rows } = await tx.query<SegmentRow>(
      `insert into segments (organization_id, name, description, criteria, created_by_principal_id) values ($1, $2, $3, $4, $5) returning ${S_COLUMNS}`,
      [orgId, s.name, s.description, JSON.stringify(s.criteria), principalId],
    );
    return rows[0]!;
  } catch (err) {
    if (isUniqueViolation(err)) throw nameTaken();
    throw err;
  }
}

export async function findSegment(tx: Queryable, orgId: string, id: string, forUpdate = false): Promise<SegmentRow | null> {
  const { rows } = await tx.query<SegmentRow>(
    `select ${S_COLUMNS} from segments where organization_id = $1 and id = $2${forUpdate ? ' for update' : ''}`,
    [orgId, id],
  );
  return rows[0] ?? null;
}

export async function saveSegment(
  tx: Queryable,
  orgId: string,
  id: string,
  s: { name: string; description: string | null; criteria: unknown },
): Promise<SegmentRow> {
  try {
    const { rows } = await tx.query<SegmentRow>(
      `update segments set name = $3, description = $4, criteria = $5 where organization_id = $1 and id = $2 returning ${S_COLUMNS}`,
      [orgId, id, s.name, s.description, JSON.stringify(s.criteria)],
    );
    return rows[0]!;
  } catch (err) {
    if (isUniqueViolation(err)) throw nameTaken();
    throw err;
  }
}

export async function deleteSegment(tx: Queryable, orgId: string, id: string): Promise<void> {
  await tx.query('delete from segments where organization_id = $1 and id = $2', [orgId, id]);
}

/** Live schedule rules over this segment (deleting it would leave them firing for nobody). */
export async function rulesUsingSegment(tx: Queryable, orgId: string, id: string): Promise<string[]> {
  const { rows } = await tx.query<{ id: string }>(
    `select id from automation_rules where organization_id = $1 and deleted_at is null and trigger_type = 'schedule' and "trigger" ->> 'segment_id' = $2::text`,
    [orgId, id],
  );
  return rows.map((r) => r.id);
}

export async function listSegments(tx: Queryable, orgId: string, f: { created: DateRange }, sort: Sort, page: Pagination) {
  const where = new SqlWhere();
  where.add('organization_id = ?', orgId);
  where.dateRange('created_at', f.created);
  return pageOf<SegmentRow>(tx, `select ${S_COLUMNS}`, `from segments where ${where.text}`, where, sort, page);
}

export async function lastEvaluations(tx: Queryable, orgId: string, segmentIds: string[]): Promise<Map<string, EvaluationRow>> {
  if (!segmentIds.length) return new Map();
  const { rows } = await tx.query<EvaluationRow>(
    `select distinct on (segment_id) ${E_COLUMNS} from segment_evaluations
     where organization_id = $1 and segment_id = any($2::uuid[]) order by segment_id, started_at desc, id desc`,
    [orgId, segmentIds],
  );
  return new Map(rows.map((r) => [r.segment_id, r]));
}

export async function findEvaluation(tx: Queryable, orgId: string, id: string): Promise<EvaluationRow | null> {
  const { rows } = await tx.query<EvaluationRow>(`select ${E_COLUMNS} from segment_evaluations where organization_id = $1 and id = $2`, [
    orgId,
    id,
  ]);
  return rows[0] ?? null;
}

/** Live patients of the organization the caller can see (the evaluation's total). */
export async function countPatients(tx: Queryable, orgId: string): Promise<number> {
  const { rows } = await tx.query<{ n: number }>(
    'select count(*)::int as n from patients where organization_id = $1 and deleted_at is null',
    [orgId],
  );
  return rows[0]!.n;
}

export async function insertEvaluation(
  tx: Queryable,
  orgId: string,
  segmentId: string,
  by: { principalId: string; permissions: string[]; total: number },
): Promise<EvaluationRow> {
  const { rows } = await tx.query<EvaluationRow>(
    `insert into segment_evaluations (organization_id, segment_id, total, requested_by_principal_id, requested_permissions)
     values ($1, $2, $3, $4, $5) returning ${E_COLUMNS}`,
    [orgId, segmentId, by.total, by.principalId, by.permissions],
  );
  return rows[0]!;
}

/**
 * One step of an evaluation: the next `limit` live patients after `after` (by id) that meet the criteria become
 * members under this evaluation. `compiled` is the criteria's SQL over `p` with its parameters from $6 on.
 * Returns the last patient id looked at (null when none was left) and how many it looked at.
 */
export async function evaluateStep(
  tx: Queryable,
  e: { organization_id: string; segment_id: string; id: string },
  compiled: Compiled,
  after: string | null,
  limit: number | null,
): Promise<{ last: string | null; seen: number; added: number }> {
  const { rows } = await tx.query<{ last: string | null; seen: number; added: number }>(
    `with page as (
       select p.id from patients p
       where p.organization_id = $1 and p.deleted_at is null and ($4::uuid is null or p.id > $4::uuid)
       order by p.id limit $5
     ), bounds as (
       select max(id::text)::uuid as last, count(*)::int as seen from page
     ), added as (
       insert into segment_members (organization_id, segment_id, evaluation_id, patient_id)
       select $1, $2, $3, p.id from patients p
       where p.organization_id = $1 and p.deleted_at is null and ($4::uuid is null or p.id > $4::uuid)
         and p.id <= (select last from bounds) and (${compiled.sql})
       returning 1
     )
     select b.last, b.seen, (select count(*)::int from added) as added from bounds b`,
    [e.organization_id, e.segment_id, e.id, after, limit, ...compiled.params],
  );
  return rows[0]!;
}

export async function recordProgress(tx: Queryable, orgId: string, id: string, seen: number, added: number): Promise<void> {
  await tx.query(
    'update segment_evaluations set processed = processed + $3, member_count = member_count + $4 where organization_id = $1 and id = $2',
    [orgId, id, seen, added],
  );
}

/** The evaluation is complete: the segment switches to its members, and older evaluations (with theirs) go. */
export async function completeEvaluation(tx: Queryable, e: EvaluationRow): Promise<{ member_count: number; evaluated_at: Date }> {
  const { rows } = await tx.query<{ member_count: number; evaluated_at: Date }>(
    `with done as (
       update segment_evaluations set status = 'done', finished_at = now() where organization_id = $1 and id = $2 returning member_count, finished_at
     )
     update segments s set current_evaluation_id = $2, evaluated_at = done.finished_at, member_count = done.member_count
     from done where s.organization_id = $1 and s.id = $3
     returning s.member_count, s.evaluated_at`,
    [e.organization_id, e.id, e.segment_id],
  );
  await tx.query('delete from segment_evaluations where organization_id = $1 and segment_id = $2 and id <> $3 and status <> $4', [
    e.organization_id,
    e.segment_id,
    e.id,
    'running',
  ]);
  return rows[0]!;
}

export async function failEvaluation(tx: Queryable, orgId: string, id: string, error: string): Promise<void> {
  await tx.query(
    `update segment_evaluations set status = 'failed', finished_at = now(), error = $3 where organization_id = $1 and id = $2`,
    [orgId, id, error.slice(0, 1000)],
  );
}

export interface MemberRow {
  segment_id: string;
  patient_id: string;
  first_name: string | null;
  last_name: string | null;
  evaluated_at: Date | null;
}

/**
 * Members of the segment's current evaluation, as the caller's row policies let it see them: every member for
 * segments.view_org, its own membership for anyone else (a patient cannot read the segment row, so the
 * current evaluation comes from a definer function that answers only at the organization in scope).
 */
export async function listMembers(tx: Queryable, orgId: string, segmentId: string, sort: Sort, page: Pagination) {
  const where = new SqlWhere();
  where.add('m.organization_id = ?', orgId).add('m.segment_id = ?', segmentId);
  where.add('m.evaluation_id = (select app.segment_current_evaluation(?::uuid, ?::uuid))', orgId, segmentId);
  return pageOf<MemberRow>(
    tx,
    `select m.segment_id, m.patient_id, p.first_name, p.last_name, e.finished_at as evaluated_at`,
    `from segment_members m
     left join patients p on p.organization_id = m.organization_id and p.id = m.patient_id
     left join segment_evaluations e on e.organization_id = m.organization_id and e.id = m.evaluation_id
     where ${where.text}`,
    where,
    sort,
    page,
  );
}
