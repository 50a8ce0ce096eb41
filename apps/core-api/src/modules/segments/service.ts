import type { Database, Queryable, RequestScope } from '@clinic/db';
import { errors, listEnvelope, parseDateRange, parsePagination, parseSort } from '@clinic/http-kit';
import type { OrgActor } from '../../platform/actor.ts';
import { audit } from '../../platform/audit.ts';
import { latestPublished } from '../custom-fields/queries.ts';
import { emit } from '../events/emit.ts';
import { type Compiled, compileCriteria, CriteriaError, fieldCatalog } from './criteria.ts';
import * as q from './queries.ts';
import { MEMBER_SORT, SEGMENT_SORT } from './schemas.ts';

const notFound = () => errors.notFound('No segment with this id in this organization.');

/** The internal event that hands a large evaluation to the worker (never delivered to webhooks). */
export const EVALUATE_EVENT = 'segment.evaluate_requested';

/** Compiles criteria against the organization's published patient fields: 400 with one field per problem. */
export async function compileFor(tx: Queryable, orgId: string, criteria: unknown, firstParam: number): Promise<Compiled> {
  const custom = await latestPublished(tx, orgId, { entityType: 'patient' });
  try {
    return compileCriteria(criteria, custom, firstParam);
  } catch (err) {
    if (err instanceof CriteriaError)
      throw errors.validation(err.fields, 'The criteria do not match the field catalog (GET /v1/segment-fields).');
    throw err;
  }
}

export async function fields(tx: Queryable, orgId: string) {
  return fieldCatalog(await latestPublished(tx, orgId, { entityType: 'patient' }));
}

function present(s: q.SegmentRow, last: q.EvaluationRow | undefined) {
  const { current_evaluation_id: _c, ...rest } = s;
  return {
    ...rest,
    last_evaluation: last
      ? {
          id: last.id,
          status: last.status,
          total: last.total,
          processed: last.processed,
          member_count: last.member_count,
          error: last.error,
          started_at: last.started_at,
          finished_at: last.finished_at,
        }
      : null,
  };
}

export async function createSegment(
  tx: Queryable,
  actor: OrgActor,
  body: { name: string; description?: string | null; criteria: unknown },
) {
  const name = body.name.trim();
  if (!name) throw errors.validation({ name: 'must not be blank' });
  await compileFor(tx, actor.orgId, body.criteria, 6);
  const row = await q.insertSegment(
    tx,
    actor.orgId,
    { name, description: body.description ?? null, criteria: body.criteria },
    actor.ctx.principalId,
  );
  await audit(tx, actor, 'segment.created', 'segment', row.id, { name: row.name, criteria: row.criteria });
  await emit(tx, actor.orgId, 'segment.created', { id: row.id });
  return present(row, undefined);
}

export async function getSegment(tx: Queryable, orgId: string, id: string) {
  const row = await q.findSegment(tx, orgId, id);
  if (!row) throw notFound();
  return present(row, (await q.lastEvaluations(tx, orgId, [id])).get(id));
}

export async function updateSegment(
  tx: Queryable,
  actor: OrgActor,
  id: string,
  body: { name?: string; description?: string | null; criteria?: unknown },
) {
  if (!Object.keys(body).length) throw errors.validation({ _body: 'give at least one field to change' });
  const current = await q.findSegment(tx, actor.orgId, id, true);
  if (!current) throw notFound();
  const next = {
    name: body.name !== undefined ? body.name.trim() : current.name,
    description: body.description !== undefined ? body.description : current.description,
    criteria: body.criteria !== undefined ? body.criteria : current.criteria,
  };
  if (!next.name) throw errors.validation({ name: 'must not be blank' });
  if (body.criteria !== undefined) await compileFor(tx, actor.orgId, next.criteria, 6);
  const changed = (Object.keys(next) as (keyof typeof next)[]).filter(
    (k) => JSON.stringify(next[k]) !== JSON.stringify(current[k as keyof q.SegmentRow]),
  );
  if (!changed.length) return getSegment(tx, actor.orgId, id);
  const row = await q.saveSegment(tx, actor.orgId, id, next);
  await audit(tx, actor, 'segment.updated', 'segment', id, {
    changes: Object.fromEntries(changed.map((k) => [k, { from: current[k as keyof q.SegmentRow], to: next[k] }])),
  });
  await emit(tx, actor.orgId, 'segment.updated', { id, changed });
  return present(row, (await q.lastEvaluations(tx, actor.orgId, [id])).get(id));
}

export async function deleteSegment(tx: Queryable, actor: OrgActor, id: string) {
  const current = await q.findSegment(tx, actor.orgId, id, true);
  if (!current) throw notFound();
  const rules = await q.rulesUsingSegment(tx, actor.orgId, id);
  if (rules.length)
    throw errors.conflict('segment_in_use', `Scheduled automation rules run over this segment (${rules.slice(0, 5).join(', ')}).`);
  await q.deleteSegment(tx, actor.orgId, id);
  await audit(tx, actor, 'segment.deleted', 'segment', id, { name: current.name });
  await emit(tx, actor.orgId, 'segment.deleted', { id });
}

export async function listSegments(tx: Queryable, orgId: string, query: Record<string, unknown>) {
  const page = parsePagination(query);
  const sort = parseSort(query.sort, SEGMENT_SORT);
  const { rows, total } = await q.listSegments(tx, orgId, { created: parseDateRange(query, 'created_at') }, sort, page);
  const last = await q.lastEvaluations(
    tx,
    orgId,
    rows.map((r) => r.id),
  );
  return listEnvelope(
    rows.map((r) => present(r, last.get(r.id))),
    page,
    total,
  );
}

export async function listMembers(tx: Queryable, orgId: string, id: string, query: Record<string, unknown>, mustExist: boolean) {
  if (mustExist && !(await q.findSegment(tx, orgId, id))) throw notFound();
  const page = parsePagination(query);
  const sort = parseSort(query.sort, MEMBER_SORT, 'patient_id', 'm.patient_id');
  const { rows, total } = await q.listMembers(tx, orgId, id, sort, page);
  return listEnvelope(rows, page, total);
}

/**
 * POST /evaluate. The members are computed by the compiled criteria under the caller's row policies (a
 * caller who cannot read patients finds none). Up to `syncLimit` patients it happens in the request's
 * transaction (200 with the finished evaluation); above, an evaluation row is made (202) and the worker
 * runs it in steps of `chunk` patients, each step a transaction under the caller's scope as the request had
 * it, so `processed` shows the progress. The members switch to the new set only when it is complete.
 */
export async function evaluate(tx: Queryable, actor: OrgActor, id: string, syncLimit: number) {
  const segment = await q.findSegment(tx, actor.orgId, id, true);
  if (!segment) throw notFound();
  const total = await q.countPatients(tx, actor.orgId);
  const e = await q.insertEvaluation(tx, actor.orgId, id, {
    principalId: actor.ctx.principalId,
    permissions: actor.ctx.permissions,
    total,
  });
  await audit(tx, actor, 'segment.evaluation_started', 'segment', id, { evaluation_id: e.id, total });
  if (total > syncLimit) {
    await emit(tx, actor.orgId, EVALUATE_EVENT, { id, evaluation_id: e.id });
    return { status: 202 as const, evaluation: e };
  }
  const compiled = await compileFor(tx, actor.orgId, segment.criteria, 6);
  const step = await q.evaluateStep(tx, e, compiled, null, null);
  await q.recordProgress(tx, actor.orgId, e.id, step.seen, step.added);
  const done = await q.completeEvaluation(tx, { ...e, member_count: step.added });
  await emit(tx, actor.orgId, 'segment.evaluated', { id, evaluation_id: e.id, member_count: done.member_count });
  return { status: 200 as const, evaluation: (await q.findEvaluation(tx, actor.orgId, e.id))! };
}

/**
 * The worker's side of a large evaluation: steps of `chunk` patients, each in its own transaction under the
 * requester's scope, then the switch. A retry after a crash starts the evaluation over (its partial rows
 * are deleted first), so the members are never a mix of two passes.
 */
export async function runEvaluation(db: Database, orgId: string, evaluationId: string, chunk: number): Promise<void> {
  const e = await q.findEvaluation(db, orgId, evaluationId);
  if (e?.status !== 'running') return;
  const scope: RequestScope = { role: 'app_rls', principalId: e.requested_by_principal_id, orgId, permissions: e.requested_permissions };
  try {
    await db.transaction(async (tx) => {
      await tx.query('delete from segment_members where organization_id = $1 and evaluation_id = $2', [orgId, e.id]);
      await tx.query('update segment_evaluations set processed = 0, member_count = 0 where organization_id = $1 and id = $2', [
        orgId,
        e.id,
      ]);
    });
    const segment = await db.withScope(scope, (tx) => q.findSegment(tx, orgId, e.segment_id));
    if (!segment) throw new Error('the segment is gone or the requester may no longer read it');
    const compiled = await db.withScope(scope, (tx) => compileFor(tx, orgId, segment.criteria, 6));
    let after: string | null = null;
    let members = 0;
    for (;;) {
      const step = await db.withScope(scope, async (tx) => {
        const s = await q.evaluateStep(tx, e, compiled, after, chunk);
        await q.recordProgress(tx, orgId, e.id, s.seen, s.added);
        return s;
      });
      members += step.added;
      if (!step.last || step.seen < chunk) break;
      after = step.last;
    }
    await db.withScope(scope, async (tx) => {
      const done = await q.completeEvaluation(tx, { ...e, member_count: members });
      await emit(tx, orgId, 'segment.evaluated', { id: e.segment_id, evaluation_id: e.id, member_count: done.member_count });
    });
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    await db.transaction((tx) => q.failEvaluation(tx, orgId, e.id, message));
  }
}
