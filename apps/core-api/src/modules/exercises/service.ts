import type { Queryable } from '@clinic/db';
import { errors, listEnvelope, parsePagination, parseSort } from '@clinic/http-kit';
import { movementProblems, type Movement } from '@clinic/telemetry';
import { recordChange } from '../../platform/audit.ts';
import type { Actor } from '../../platform/actor.ts';
import { findExercise, insertExercise, listExercises as listRows, setStatus, type ExerciseRow } from './queries.ts';
import { EXERCISE_SORT } from './schemas.ts';

const notFound = () => errors.notFound('No exercise with this id is visible to you.');

/** Moves allowed between statuses (spec 3.5 names them without moves; docs/decisions.md "Telemetry"). */
const MOVES: Record<string, string[]> = { draft: ['published', 'archived'], published: ['archived'], archived: ['published'] };

export async function createExercise(
  tx: Queryable,
  actor: Actor,
  orgId: string,
  body: { slug: string; name: string; kind: string; movement?: Movement },
): Promise<ExerciseRow> {
  if (!body.name.trim()) throw errors.validation({ name: 'must not be blank' });
  if (body.movement) {
    const problems = movementProblems(body.movement);
    if (Object.keys(problems).length) throw errors.validation(problems);
    if (body.kind !== 'reps_based') throw errors.validation({ movement: 'only reps_based exercises are scored by reps' });
  }
  const id = await insertExercise(tx, orgId, body, body.movement ?? null);
  await recordChange(
    tx,
    actor,
    'exercise.created',
    { type: 'exercise', id: id, organizationId: orgId },
    { slug: body.slug, kind: body.kind },
  );
  return (await findExercise(tx, id))!;
}

export async function getExercise(tx: Queryable, id: string): Promise<ExerciseRow> {
  const row = await findExercise(tx, id);
  if (!row) throw notFound();
  return row;
}

export async function listExercises(tx: Queryable, orgId: string | null, query: Record<string, unknown>) {
  const page = parsePagination(query);
  const sort = parseSort(query.sort, EXERCISE_SORT);
  const { rows, total } = await listRows(
    tx,
    orgId,
    { status: query.status as string | undefined, kind: query.kind as string | undefined },
    sort,
    page,
  );
  return listEnvelope(rows, page, total);
}

export async function changeStatus(tx: Queryable, actor: Actor, id: string, status: string): Promise<ExerciseRow> {
  const row = await findExercise(tx, id, { forUpdate: true });
  if (!row) throw notFound();
  // Platform exercises are the platform's: only superadmins (app_bypass) may change them.
  if (row.organization_id === null && !actor.ctx.isSuperadmin)
    throw errors.forbidden('Platform library exercises are managed by platform superadmins.');
  if (row.organization_id !== null && row.organization_id !== actor.ctx.orgId && !actor.ctx.isSuperadmin) throw notFound();
  if (row.status === status) return row;
  if (!MOVES[row.status]!.includes(status))
    throw errors.conflict('invalid_transition', `An exercise cannot go from ${row.status} to ${status}.`);
  if (!(await setStatus(tx, id, status)))
    throw errors.forbidden("This needs the exercises.manage_org permission in the exercise's organization.");
  await recordChange(
    tx,
    actor,
    'exercise.status_changed',
    { type: 'exercise', id: id, organizationId: row.organization_id },
    { changes: { status: { from: row.status, to: status } } },
  );
  return (await findExercise(tx, id))!;
}
