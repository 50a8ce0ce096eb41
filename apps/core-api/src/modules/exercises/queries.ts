import { isUniqueViolation, type Queryable } from '@clinic/db';
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
  movement: Movement | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = `e.id, e.organization_id, e.slug, e.name, e.kind, e.status, e.asset_version, e.catalog_render_id,
  (select m.definition from exercise_movements m where m.exercise_id = e.id) as movement, e.created_at, e.updated_at`;

export async function insertExercise(
  tx: Queryable,
  orgId: string,
  b: { slug: string; name: string; kind: string },
  movement: Movement | null,
): Promise<string> {
  try {
    const { rows } = await tx.query<{ id: string }>(
      'insert into exercises (organization_id, slug, name, kind) values ($1, $2, $3, $4) returning id',
      [orgId, b.slug, b.name.trim(), b.kind],
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
