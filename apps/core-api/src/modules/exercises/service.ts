import type { Queryable } from '@clinic/db';
import { errors, listEnvelope, parsePagination, parseSort } from '@clinic/http-kit';
import { movementProblems, type Movement } from '@clinic/telemetry';
import { recordChange } from '../../platform/audit.ts';
import type { Actor } from '../../platform/actor.ts';
import { createHash } from 'node:crypto';
import {
  bumpAssetVersion as bumpVersion,
  copyOf,
  deleteExercise as deleteRow,
  findExercise,
  insertExercise,
  listExercises as listRows,
  propagationTargets,
  refreshCopy,
  setStatus,
  updateExercise as updateRow,
  type ExerciseRow,
} from './queries.ts';
import { EXERCISE_SORT } from './schemas.ts';

const notFound = () => errors.notFound('No exercise with this id is visible to you.');

/** Moves allowed between statuses (spec 3.5 names them without moves; docs/decisions.md "Telemetry"). */
const MOVES: Record<string, string[]> = { draft: ['published', 'archived'], published: ['archived'], archived: ['published'] };

function checkMovement(kind: string, movement: Movement | undefined): void {
  if (!movement) return;
  const problems = movementProblems(movement);
  if (Object.keys(problems).length) throw errors.validation(problems);
  if (kind !== 'reps_based') throw errors.validation({ movement: 'only reps_based exercises are scored by reps' });
}

/** `orgId` null: the platform library (superadmins only; the route checks it). */
export async function createExercise(
  tx: Queryable,
  actor: Actor,
  orgId: string | null,
  body: { slug: string; name: string; kind: string; movement?: Movement },
): Promise<ExerciseRow> {
  if (!body.name.trim()) throw errors.validation({ name: 'must not be blank' });
  checkMovement(body.kind, body.movement);
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

/**
 * The exercise to change, locked: platform exercises are the platform's (only superadmins, on app_bypass,
 * change them); another organization's is not there for the caller.
 */
async function changeable(tx: Queryable, actor: Actor, id: string): Promise<ExerciseRow> {
  // Read first, then lock: FOR UPDATE applies the update policy, under which a platform exercise is not
  // there for an organization's staff, who must hear 403 rather than 404.
  const seen = await findExercise(tx, id);
  if (!seen) throw notFound();
  if (seen.organization_id === null && !actor.ctx.isSuperadmin)
    throw errors.forbidden('Platform library exercises are managed by platform superadmins.');
  if (seen.organization_id !== null && seen.organization_id !== actor.ctx.orgId && !actor.ctx.isSuperadmin) throw notFound();
  const row = await findExercise(tx, id, { forUpdate: true });
  if (!row) throw noRight();
  return row;
}

const target = (row: ExerciseRow) => ({ type: 'exercise', id: row.id, organizationId: row.organization_id });
const noRight = () => errors.forbidden("This needs the exercises.manage_org permission in the exercise's organization.");

export async function changeStatus(tx: Queryable, actor: Actor, id: string, status: string): Promise<ExerciseRow> {
  const row = await changeable(tx, actor, id);
  if (row.status === status) return row;
  if (!MOVES[row.status]!.includes(status))
    throw errors.conflict('invalid_transition', `An exercise cannot go from ${row.status} to ${status}.`);
  if (!(await setStatus(tx, id, status))) throw noRight();
  await recordChange(tx, actor, 'exercise.status_changed', target(row), { changes: { status: { from: row.status, to: status } } });
  return (await findExercise(tx, id))!;
}

/** PATCH /v1/exercises/{id}: the name and the movement definition (the slug names the asset folder, the kind its videos). */
export async function updateExercise(
  tx: Queryable,
  actor: Actor,
  id: string,
  body: { name?: string; movement?: Movement },
): Promise<ExerciseRow> {
  if (body.name === undefined && body.movement === undefined) throw errors.validation({ _body: 'give at least one field to change' });
  const row = await changeable(tx, actor, id);
  const name = body.name?.trim();
  if (name !== undefined && !name) throw errors.validation({ name: 'must not be blank' });
  checkMovement(row.kind, body.movement);
  const changes: Record<string, { from: unknown; to: unknown }> = {};
  if (name !== undefined && name !== row.name) changes.name = { from: row.name, to: name };
  if (body.movement !== undefined && JSON.stringify(body.movement) !== JSON.stringify(row.movement))
    changes.movement = { from: row.movement, to: body.movement };
  if (!Object.keys(changes).length) return row;
  await updateRow(tx, row, { name: changes.name ? name : undefined, movement: changes.movement ? body.movement : undefined });
  await recordChange(tx, actor, 'exercise.updated', target(row), { changes });
  return (await findExercise(tx, id))!;
}

/**
 * POST /v1/exercises/{id}/asset-version (spec 9.6): the exercise's primitives changed, so every cached render
 * of it becomes a miss; the next compose bakes from the new files.
 */
export async function bumpAssetVersion(tx: Queryable, actor: Actor, id: string): Promise<ExerciseRow> {
  const row = await changeable(tx, actor, id);
  const next = await bumpVersion(tx, id);
  if (next === null) throw noRight();
  await recordChange(tx, actor, 'exercise.asset_version_bumped', target(row), { asset_version: { from: row.asset_version, to: next } });
  return (await findExercise(tx, id))!;
}

export async function deleteExercise(tx: Queryable, actor: Actor, id: string): Promise<void> {
  const row = await changeable(tx, actor, id);
  if (!(await deleteRow(tx, id))) throw noRight();
  await recordChange(tx, actor, 'exercise.deleted', target(row), { slug: row.slug });
}

/** The slug of an organization's copy: the template's and a short digest of the organization (slugs are unique platform-wide). */
export function copySlug(templateSlug: string, orgId: string): string {
  return `${templateSlug.slice(0, 90)}-${createHash('sha256').update(orgId).digest('hex').slice(0, 8)}`;
}

/**
 * POST /v1/exercises/{id}/propagate (superadmins): a published platform exercise becomes an exercise of each
 * organization named (or of every organization): created where the organization has no copy yet (published,
 * with the template's movement definition), brought back to the template's name, kind, asset version and
 * movement where it has one. Each organization's trail records it with action_context template_propagate
 * (spec 6.2); the platform's trail records the propagation.
 */
export async function propagateExercise(tx: Queryable, actor: Actor, id: string, organizationIds: string[] | null) {
  const t = await findExercise(tx, id, { forUpdate: true });
  if (!t) throw notFound();
  if (t.organization_id !== null || t.template_exercise_id !== null)
    throw errors.conflict('not_a_platform_exercise', 'Only exercises of the platform library are templates that propagate.');
  if (t.status !== 'published') throw errors.conflict('not_published', 'Publish the platform exercise before propagating it.');
  const targets = await propagationTargets(tx, organizationIds);
  if (organizationIds && targets.length !== new Set(organizationIds.map((o) => o.toLowerCase())).size)
    throw errors.validation({ organization_ids: 'names an organization that does not exist' });
  const created: { organization_id: string; exercise_id: string }[] = [];
  const updated: { organization_id: string; exercise_id: string }[] = [];
  const context = { actionContext: 'template_propagate' };
  for (const org of targets) {
    const existing = await copyOf(tx, org.id, t.id);
    if (existing) {
      await refreshCopy(tx, existing, t);
      if (t.movement) await updateRow(tx, { id: existing, organization_id: org.id }, { movement: t.movement });
      updated.push({ organization_id: org.id, exercise_id: existing });
      const data = { template_exercise_id: t.id, asset_version: t.asset_version };
      await recordChange(tx, actor, 'exercise.propagated', { type: 'exercise', id: existing, organizationId: org.id }, data, context);
      continue;
    }
    const copyId = await insertExercise(
      tx,
      org.id,
      {
        slug: copySlug(t.slug, org.id),
        name: t.name,
        kind: t.kind,
        status: 'published',
        template_exercise_id: t.id,
        asset_version: t.asset_version,
      },
      t.movement,
    );
    created.push({ organization_id: org.id, exercise_id: copyId });
    const data = { template_exercise_id: t.id, asset_version: t.asset_version, created: true };
    await recordChange(tx, actor, 'exercise.propagated', { type: 'exercise', id: copyId, organizationId: org.id }, data, context);
  }
  await recordChange(
    tx,
    actor,
    'exercise.propagation_run',
    { type: 'exercise', id: t.id, organizationId: null },
    {
      created: created.length,
      updated: updated.length,
    },
  );
  return { template_exercise_id: t.id, created, updated };
}
