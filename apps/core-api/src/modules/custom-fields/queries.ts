import { isUniqueViolation, prepared, type Queryable } from '@clinic/db';
import { containsPattern, errors, SqlWhere, type DateRange, type Pagination, type Sort } from '@clinic/http-kit';
import { versionQueries } from '../../platform/versioned/queries.ts';
import type { EntityType, FieldDefinition } from './definition.ts';
import { markDeleted } from '../../platform/deleted.ts';

export interface CustomFieldRow extends FieldDefinition {
  id: string;
  organization_id: string;
  entity_type: EntityType;
  system_key: string | null;
  version: number;
  published: boolean;
  published_at: Date;
  created_at: Date;
  updated_at: Date;
}

/** custom_field_versions: the append-only snapshots (spec 2.10), read as `fields`. */
export const fieldVersions = versionQueries<'fields', FieldDefinition>({
  table: 'custom_field_versions',
  parent: 'custom_field_id',
  snapshot: 'fields_snapshot',
  as: 'fields',
});

const COLUMNS = `id, organization_id, entity_type, key, label, field_type, options, private, system_key, version, published,
  published_at, created_at, updated_at`;

// Every statement names the organization: superadmins run on app_bypass, where no policy narrows rows.

function conflict(err: unknown): never {
  if (isUniqueViolation(err)) {
    const detail = String((err as { constraint?: string; message?: string }).constraint ?? (err as Error).message);
    if (detail.includes('system_key'))
      throw errors.conflict('system_key_taken', 'A live field of this entity type already has this system_key.');
    throw errors.conflict('custom_field_key_taken', 'A live field of this entity type already uses this key; choose another key.');
  }
  throw err;
}

export async function insertField(
  tx: Queryable,
  orgId: string,
  entityType: EntityType,
  d: FieldDefinition,
  systemKey: string | null,
): Promise<CustomFieldRow> {
  try {
    const { rows } = await tx.query<CustomFieldRow>(
      `insert into custom_fields (organization_id, entity_type, key, label, field_type, options, private, system_key)
       values ($1, $2, $3, $4, $5, $6::jsonb, $7, $8) returning ${COLUMNS}`,
      [orgId, entityType, d.key, d.label, d.field_type, JSON.stringify(d.options), d.private, systemKey],
    );
    return rows[0]!;
  } catch (err) {
    return conflict(err);
  }
}

export async function findField(
  tx: Queryable,
  orgId: string,
  id: string,
  opts: { forUpdate?: boolean } = {},
): Promise<CustomFieldRow | null> {
  const { rows } = await tx.query<CustomFieldRow>(
    `select ${COLUMNS} from custom_fields where id = $1 and organization_id = $2 and deleted_at is null${opts.forUpdate ? ' for update' : ''}`,
    [id, orgId],
  );
  return rows[0] ?? null;
}

/** Writes the current state: the definition, the version number and the published flag. */
export async function saveField(
  tx: Queryable,
  orgId: string,
  id: string,
  d: FieldDefinition,
  state: { version: number; published: boolean; publishedNow: boolean },
): Promise<CustomFieldRow> {
  try {
    const { rows } = await tx.query<CustomFieldRow>(
      `update custom_fields set key = $3, label = $4, field_type = $5, options = $6::jsonb, private = $7, version = $8, published = $9,
         published_at = case when $10 then now() else published_at end
       where id = $1 and organization_id = $2 returning ${COLUMNS}`,
      [id, orgId, d.key, d.label, d.field_type, JSON.stringify(d.options), d.private, state.version, state.published, state.publishedNow],
    );
    return rows[0]!;
  } catch (err) {
    return conflict(err);
  }
}

/** The row as it was (no RETURNING: after the mark, custom_fields_read hides it without data.view_deleted). */
export async function softDeleteField(tx: Queryable, orgId: string, id: string): Promise<CustomFieldRow | null> {
  const row = await findField(tx, orgId, id, { forUpdate: true });
  if (!row || !(await markDeleted(tx, 'custom_fields', orgId, id))) return null;
  return row;
}

export interface FieldFilter {
  entityType?: string | undefined;
  published?: boolean | undefined;
  q?: string | undefined;
  created: DateRange;
  includeDeleted?: boolean;
}

export async function listFields(
  tx: Queryable,
  orgId: string,
  f: FieldFilter,
  sort: Sort,
  page: Pagination,
): Promise<{ rows: CustomFieldRow[]; total: number }> {
  const where = new SqlWhere().add('organization_id = ?', orgId);
  if (!f.includeDeleted) where.add('deleted_at is null');
  where.optional('entity_type = ?', f.entityType).optional('published = ?', f.published).dateRange('created_at', f.created);
  if (f.q) {
    const p = containsPattern(f.q);
    where.add('(key ilike ? or label ilike ?)', p, p);
  }
  const count = await tx.query<{ total: number }>(`select count(*)::int as total from custom_fields where ${where.text}`, where.params);
  const { rows } = await tx.query<CustomFieldRow>(
    `select ${COLUMNS} from custom_fields where ${where.text} order by ${sort.sql} limit ${where.param(page.limit)} offset ${where.param(page.offset)}`,
    where.params,
  );
  return { rows, total: count.rows[0]!.total };
}

export interface PublishedField extends FieldDefinition {
  custom_field_id: string;
  version: number;
}

/**
 * The latest published version of each live field of an entity type (or of the given ids): what
 * records are validated against and what a new form snapshots (spec 2.10). Drafts are never used.
 */
export async function latestPublished(
  tx: Queryable,
  orgId: string,
  by: { entityType?: EntityType; ids?: string[] },
): Promise<PublishedField[]> {
  const where = new SqlWhere().add('f.organization_id = ?', orgId).add('f.deleted_at is null').optional('f.entity_type = ?', by.entityType);
  if (by.ids) where.add('f.id = any(?::uuid[])', by.ids);
  // Prepared: every read of a record with custom fields (each patients list page) runs it, and planning it
  // with the two tables' policies cost more than running it.
  const text = `select distinct on (v.custom_field_id) v.custom_field_id, v.version, v.fields_snapshot as fields
     from custom_fields f join custom_field_versions v on v.custom_field_id = f.id and v.organization_id = f.organization_id
     where ${where.text} order by v.custom_field_id, v.version desc`;
  const { rows } = await tx.query<{ custom_field_id: string; version: number; fields: FieldDefinition }>(
    text,
    where.params,
    prepared(text),
  );
  return rows.map((r) => ({ ...r.fields, private: r.fields.private ?? false, custom_field_id: r.custom_field_id, version: r.version }));
}
