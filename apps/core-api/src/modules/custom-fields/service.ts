import type { Queryable } from '@clinic/db';
import { errors, listEnvelope, parseDateRange, parsePagination, parseSort, type ListEnvelope } from '@clinic/http-kit';
import { audit } from '../../platform/audit.ts';
import { emit } from '../events/emit.ts';
import { checkDefinition, snapshotOf, type EntityType, type FieldDefinition, type FieldType } from './definition.ts';
import * as q from './queries.ts';
import { FIELD_SORT } from './schemas.ts';
import { versionLifecycle } from '../../platform/versioned/service.ts';
import type { OrgActor } from '../../platform/actor.ts';

const notFound = () => errors.notFound('No custom field with this id in this organization.');

export interface CreateFieldInput {
  entity_type: EntityType;
  key: string;
  label: string;
  field_type: FieldType;
  options?: string[];
  private?: boolean;
  system_key?: string;
}
export type UpdateFieldInput = Partial<Pick<CreateFieldInput, 'key' | 'label' | 'field_type' | 'options' | 'private'>>;

const definitionOf = (r: q.CustomFieldRow): FieldDefinition => snapshotOf(r);

/** Publish, rollback and the version reads (spec 3.1, 4.8), shared with the other versioned resources. */
export const fieldLifecycle = versionLifecycle({
  entity: 'custom_field',
  noun: 'custom field',
  shortNoun: 'field',
  notFound,
  versions: q.fieldVersions,
  snapshotKey: 'fields',
  find: q.findField,
  save: q.saveField,
  contentOf: definitionOf,
  // Snapshots taken before `private` existed read as public fields.
  restore: (snap) => snapshotOf({ ...snap, private: snap.private ?? false }),
  eventData: (row) => ({ entity_type: row.entity_type }),
});

/** Spec 3.1 (none) -> published, version 1; the version 1 snapshot is archived in the same transaction. */
export async function createField(tx: Queryable, actor: OrgActor, body: CreateFieldInput): Promise<q.CustomFieldRow> {
  const d = checkDefinition({
    key: body.key,
    label: body.label,
    field_type: body.field_type,
    options: body.options ?? [],
    private: body.private ?? false,
  });
  const row = await q.insertField(tx, actor.orgId, body.entity_type, d, body.system_key ?? null);
  await fieldLifecycle.archive(tx, actor, row);
  await audit(tx, actor, 'custom_field.created', 'custom_field', row.id, {
    entity_type: row.entity_type,
    system_key: row.system_key,
    version: 1,
    fields: definitionOf(row),
  });
  await emit(tx, actor.orgId, 'custom_field.published', { id: row.id, entity_type: row.entity_type, version: 1 });
  return row;
}

export async function getField(tx: Queryable, orgId: string, id: string): Promise<q.CustomFieldRow> {
  const row = await q.findField(tx, orgId, id);
  if (!row) throw notFound();
  return row;
}

export async function listFields(
  tx: Queryable,
  orgId: string,
  query: Record<string, unknown>,
  includeDeleted = false,
): Promise<ListEnvelope<q.CustomFieldRow>> {
  const page = parsePagination(query);
  const sort = parseSort(query.sort, FIELD_SORT);
  const created = parseDateRange(query, 'created_at');
  const published = query.published === 'true' ? true : query.published === 'false' ? false : undefined;
  const entityType = typeof query.entity_type === 'string' && query.entity_type ? query.entity_type : undefined;
  const text = typeof query.q === 'string' ? query.q.trim() : '';
  const { rows, total } = await q.listFields(
    tx,
    orgId,
    { entityType, published, q: text || undefined, created, includeDeleted },
    sort,
    page,
  );
  return listEnvelope(rows, page, total);
}

/**
 * Spec 3.1 published|draft -> draft: the definition is edited in place, the version number stays, and
 * nothing is archived; forms and records keep using the last published version. A PATCH that changes
 * nothing writes nothing.
 */
export async function updateField(tx: Queryable, actor: OrgActor, id: string, body: UpdateFieldInput): Promise<q.CustomFieldRow> {
  if (!Object.keys(body).length) throw errors.validation({ _body: 'give at least one field to change' });
  const current = await q.findField(tx, actor.orgId, id, { forUpdate: true });
  if (!current) throw notFound();
  const before = definitionOf(current);
  const next = checkDefinition({ ...before, ...body } as FieldDefinition);
  const changes: Record<string, { from: unknown; to: unknown }> = {};
  for (const k of Object.keys(next) as (keyof FieldDefinition)[]) {
    if (JSON.stringify(next[k]) !== JSON.stringify(before[k])) changes[k] = { from: before[k], to: next[k] };
  }
  if (!Object.keys(changes).length) return current;
  const row = await q.saveField(tx, actor.orgId, id, next, { version: current.version, published: false, publishedNow: false });
  await audit(tx, actor, 'custom_field.updated', 'custom_field', id, { version: row.version, changes });
  await emit(tx, actor.orgId, 'custom_field.updated', { id, version: row.version, published: false });
  return row;
}

/** Soft delete: the field leaves lists and validation; version snapshots and form snapshots stay. */
export async function deleteField(tx: Queryable, actor: OrgActor, id: string): Promise<void> {
  const row = await q.softDeleteField(tx, actor.orgId, id);
  if (!row) throw notFound();
  await audit(tx, actor, 'custom_field.deleted', 'custom_field', id, { version: row.version, fields: definitionOf(row) });
  await emit(tx, actor.orgId, 'custom_field.deleted', { id, entity_type: row.entity_type });
}
