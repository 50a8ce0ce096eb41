import type { Queryable } from '@clinic/db';
import { errors, listEnvelope, parseDateRange, parsePagination, parseSort, type ListEnvelope } from '@clinic/http-kit';
import { audit } from '../../platform/audit.ts';
import { emit } from '../events/emit.ts';
import { latestPublished } from '../custom-fields/queries.ts';
import type { OrgActor } from '../../platform/actor.ts';
import * as q from './queries.ts';
import { TEMPLATE_SORT } from './schemas.ts';
import { versionLifecycle } from '../../platform/versioned/service.ts';

const notFound = () => errors.notFound('No form template with this id in this organization.');

export interface TemplateInput {
  name?: string;
  description?: string | null;
  fields?: { custom_field_id: string; required?: boolean }[];
}

/**
 * A template is built from live custom fields of entity type `form` of the same organization, each
 * once, whose published keys differ (a form addresses its values by key).
 */
async function checkFields(tx: Queryable, orgId: string, fields: NonNullable<TemplateInput['fields']>): Promise<q.TemplateField[]> {
  const ids = fields.map((f) => f.custom_field_id.toLowerCase());
  if (new Set(ids).size !== ids.length) throw errors.validation({ fields: 'each custom field may appear once' });
  const found = new Map((await latestPublished(tx, orgId, { entityType: 'form', ids })).map((f) => [f.custom_field_id, f]));
  const missing = ids.filter((id) => !found.has(id));
  if (missing.length)
    throw errors.validation({ fields: `not live custom fields of entity type form in this organization: ${missing.join(', ')}` });
  const keys = ids.map((id) => found.get(id)!.key);
  if (new Set(keys).size !== keys.length) throw errors.validation({ fields: 'two fields share a key' });
  return ids.map((id, i) => ({ custom_field_id: id, required: fields[i]!.required ?? false }));
}

function cleanName(name: string): string {
  const v = name.trim();
  if (!v) throw errors.validation({ name: 'must not be blank' });
  return v;
}

const contentOf = (r: q.TemplateRow): q.TemplateContent => ({ name: r.name, description: r.description, fields: r.fields });

/** Publish, rollback and the version reads (spec 9.6), shared with the other versioned resources. */
export const templateLifecycle = versionLifecycle({
  entity: 'form_template',
  noun: 'form template',
  shortNoun: 'template',
  notFound,
  versions: q.templateVersions,
  snapshotKey: 'template',
  find: q.findTemplate,
  save: q.saveTemplate,
  contentOf,
  // The fields are checked again: one may have been deleted or moved to another key since the draft was saved.
  recheck: async (tx, orgId, content) => ({ ...content, fields: await checkFields(tx, orgId, content.fields) }),
});

/** Created published at version 1, with its snapshot archived (spec 9.6: the lifecycle of 3.1). */
export async function createTemplate(
  tx: Queryable,
  actor: OrgActor,
  body: Required<Pick<TemplateInput, 'name' | 'fields'>> & TemplateInput,
) {
  const content = {
    name: cleanName(body.name),
    description: body.description?.trim() || null,
    fields: await checkFields(tx, actor.orgId, body.fields),
  };
  const row = await q.insertTemplate(tx, actor.orgId, content);
  await templateLifecycle.archive(tx, actor, row);
  await audit(tx, actor, 'form_template.created', 'form_template', row.id, { version: 1, template: content });
  await emit(tx, actor.orgId, 'form_template.published', { id: row.id, version: 1 });
  return row;
}

export async function getTemplate(tx: Queryable, orgId: string, id: string) {
  const row = await q.findTemplate(tx, orgId, id);
  if (!row) throw notFound();
  return row;
}

export async function listTemplates(
  tx: Queryable,
  orgId: string,
  query: Record<string, unknown>,
  includeDeleted = false,
): Promise<ListEnvelope<q.TemplateRow>> {
  const page = parsePagination(query);
  const sort = parseSort(query.sort, TEMPLATE_SORT);
  const created = parseDateRange(query, 'created_at');
  const published = query.published === 'true' ? true : query.published === 'false' ? false : undefined;
  const text = typeof query.q === 'string' ? query.q.trim() : '';
  const { rows, total } = await q.listTemplates(tx, orgId, { q: text || undefined, published, created, includeDeleted }, sort, page);
  return listEnvelope(rows, page, total);
}

/** Edits the draft in place (same version); forms keep being made from the last published version. */
export async function updateTemplate(tx: Queryable, actor: OrgActor, id: string, body: TemplateInput) {
  if (!Object.keys(body).length) throw errors.validation({ _body: 'give at least one field to change' });
  const current = await q.findTemplate(tx, actor.orgId, id, { forUpdate: true });
  if (!current) throw notFound();
  const before = contentOf(current);
  const next: q.TemplateContent = {
    name: body.name !== undefined ? cleanName(body.name) : before.name,
    description: body.description !== undefined ? body.description?.trim() || null : before.description,
    fields: body.fields !== undefined ? await checkFields(tx, actor.orgId, body.fields) : before.fields,
  };
  const changes: Record<string, { from: unknown; to: unknown }> = {};
  for (const k of Object.keys(next) as (keyof q.TemplateContent)[]) {
    if (JSON.stringify(next[k]) !== JSON.stringify(before[k])) changes[k] = { from: before[k], to: next[k] };
  }
  if (!Object.keys(changes).length) return current;
  const row = await q.saveTemplate(tx, actor.orgId, id, next, { version: current.version, published: false, publishedNow: false });
  await audit(tx, actor, 'form_template.updated', 'form_template', id, { version: row.version, changes });
  await emit(tx, actor.orgId, 'form_template.updated', { id, version: row.version, published: false });
  return row;
}

export async function deleteTemplate(tx: Queryable, actor: OrgActor, id: string): Promise<void> {
  const row = await q.softDeleteTemplate(tx, actor.orgId, id);
  if (!row) throw notFound();
  await audit(tx, actor, 'form_template.deleted', 'form_template', id, { version: row.version });
  await emit(tx, actor.orgId, 'form_template.deleted', { id });
}
