import { isForeignKeyViolation, isUniqueViolation, type Queryable } from '@clinic/db';
import { errors, SqlWhere, type Pagination, type Sort } from '@clinic/http-kit';
import type { Movement } from '@clinic/telemetry';

export interface ExerciseRow {
  id: string;
  organization_id: string | null;
  slug: string;
  name: string;
  kind: 'reps_based' | 'duration_based';
  status: 'draft' | 'published' | 'archived';
  asset_version: number;
  catalog_render_id: string | null;
  template_exercise_id: string | null;
  movement: Movement | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = `e.id, e.organization_id, e.slug, e.name, e.kind, e.status, e.asset_version, e.catalog_render_id, e.template_exercise_id,
  (select m.definition from exercise_movements m where m.exercise_id = e.id) as movement, e.created_at, e.updated_at`;

export async function insertExercise(
  tx: Queryable,
  orgId: string | null,
  b: { slug: string; name: string; kind: string; status?: string; template_exercise_id?: string; asset_version?: number },
  movement: Movement | null,
): Promise<string> {
  try {
    const { rows } = await tx.query<{ id: string }>(
      `insert into exercises (organization_id, slug, name, kind, status, template_exercise_id, asset_version)
       values ($1, $2, $3, $4, coalesce($5, 'draft'), $6, coalesce($7, 1)) returning id`,
      [orgId, b.slug, b.name.trim(), b.kind, b.status ?? null, b.template_exercise_id ?? null, b.asset_version ?? null],
    );
    const id = rows[0]!.id;
    if (movement)
      await tx.query('insert into exercise_movements (exercise_id, organization_id, definition) values ($1, $2, $3::jsonb)', [
        id,
        orgId,
        JSON.stringify(movement),
      ]);
    return id;
  } catch (err) {
    if (isUniqueViolation(err))
      throw errors.conflict('slug_taken', `An exercise with the slug "${b.slug}" exists; slugs are unique platform-wide.`);
    throw err;
  }
}

/** Visible to the caller under RLS (platform published ones, and the organization's). */
export async function findExercise(tx: Queryable, id: string, opts: { forUpdate?: boolean } = {}): Promise<ExerciseRow | null> {
  const { rows } = await tx.query<ExerciseRow>(
    `select ${COLUMNS} from exercises e where e.id = $1${opts.forUpdate ? ' for update of e' : ''}`,
    [id],
  );
  return rows[0] ?? null;
}

export async function listExercises(
  tx: Queryable,
  orgId: string | null,
  f: { status?: string | undefined; kind?: string | undefined },
  sort: Sort,
  page: Pagination,
) {
  // Platform library plus the organization in scope; a superadmin (no policies) sees the same set.
  const where = new SqlWhere().add('(e.organization_id is null or e.organization_id = ?)', orgId ?? '00000000-0000-0000-0000-000000000000');
  if (f.status) where.add('e.status = ?', f.status);
  if (f.kind) where.add('e.kind = ?', f.kind);
  const count = await tx.query<{ total: number }>(`select count(*)::int as total from exercises e where ${where.text}`, where.params);
  const { rows } = await tx.query<ExerciseRow>(
    `select ${COLUMNS} from exercises e where ${where.text} order by ${sort.sql.replace(/\b(created_at|slug|name|id)\b/g, 'e.$1')} limit ${where.param(page.limit)} offset ${where.param(page.offset)}`,
    where.params,
  );
  return { rows, total: count.rows[0]!.total };
}

export async function setStatus(tx: Queryable, id: string, status: string): Promise<boolean> {
  const { rowCount } = await tx.query('update exercises set status = $2 where id = $1', [id, status]);
  return rowCount > 0;
}

/** Renames an exercise and/or sets its movement definition (inserted when it had none). */
export async function updateExercise(
  tx: Queryable,
  row: Pick<ExerciseRow, 'id' | 'organization_id'>,
  b: { name?: string | undefined; movement?: Movement | undefined },
): Promise<void> {
  if (b.name !== undefined) await tx.query('update exercises set name = $2 where id = $1', [row.id, b.name]);
  if (b.movement !== undefined)
    await tx.query(
      `insert into exercise_movements (exercise_id, organization_id, definition) values ($1, $2, $3::jsonb)
       on conflict (exercise_id) do update set definition = excluded.definition`,
      [row.id, row.organization_id, JSON.stringify(b.movement)],
    );
}

/** Spec 9.6: the next asset version; cached renders of the older ones become misses. */
export async function bumpAssetVersion(tx: Queryable, id: string): Promise<number | null> {
  const { rows } = await tx.query<{ asset_version: number }>(
    'update exercises set asset_version = asset_version + 1 where id = $1 returning asset_version',
    [id],
  );
  return rows[0]?.asset_version ?? null;
}

/**
 * Deletes an exercise (its movement definition and renders go by cascade). Exercise sessions and treatment
 * plans that name it refuse the delete (foreign keys): 409 exercise_in_use.
 */
export async function deleteExercise(tx: Queryable, id: string): Promise<boolean> {
  try {
    const { rowCount } = await tx.query('delete from exercises where id = $1', [id]);
    return rowCount > 0;
  } catch (err) {
    if (isForeignKeyViolation(err))
      throw errors.conflict(
        'exercise_in_use',
        'Exercise sessions or treatment plans use this exercise: archive it instead (PUT /v1/exercises/{id}/status).',
      );
    throw err;
  }
}

/** Organizations a propagation reaches: the ones named, or every organization. */
export async function propagationTargets(tx: Queryable, ids: string[] | null): Promise<{ id: string }[]> {
  const { rows } = await tx.query<{ id: string }>(
    'select id from organizations where ($1::uuid[] is null or id = any($1::uuid[])) order by id',
    [ids],
  );
  return rows;
}

/** The organization's copy of a platform exercise, if it has one. */
export async function copyOf(tx: Queryable, orgId: string, templateId: string): Promise<string | null> {
  const { rows } = await tx.query<{ id: string }>(
    'select id from exercises where organization_id = $1 and template_exercise_id = $2 for update',
    [orgId, templateId],
  );
  return rows[0]?.id ?? null;
}

/** Brings a copy back to its template's name, kind and asset version (its status stays the organization's). */
export async function refreshCopy(tx: Queryable, id: string, t: Pick<ExerciseRow, 'name' | 'kind' | 'asset_version'>): Promise<void> {
  await tx.query('update exercises set name = $2, kind = $3, asset_version = $4 where id = $1', [id, t.name, t.kind, t.asset_version]);
}
