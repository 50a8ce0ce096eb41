import type { Queryable } from '@clinic/db';
import { errors, listEnvelope, parseDateRange, parsePagination, parseSort } from '@clinic/http-kit';
import type { OrgActor } from '../../platform/actor.ts';
import { audit } from '../../platform/audit.ts';
import { emit } from '../events/emit.ts';
import * as q from './queries.ts';
import { SPECIALTY_SORT } from './schemas.ts';

const notFound = () => errors.notFound('No specialty with this id in this organization.');
const CODE = /^[a-z0-9](?:[a-z0-9_-]{0,62}[a-z0-9])?$/;

export interface SpecialtyBody {
  code?: string;
  name?: string;
  description?: string | null;
}

/** Trimmed name and description, lower-case code; every problem in one 400 validation_error. */
function normalize(body: SpecialtyBody, current: q.SpecialtyRow | null): q.SpecialtyInput {
  const problems: Record<string, string> = {};
  const code = body.code === undefined ? current?.code : body.code.trim().toLowerCase();
  if (code === undefined || !CODE.test(code))
    problems.code = 'lower case letters, digits, "-" and "_", starting and ending with a letter or digit';
  const name = body.name === undefined ? current?.name : body.name.trim();
  if (!name) problems.name = 'must not be blank';
  const description = body.description === undefined ? (current?.description ?? null) : body.description?.trim() || null;
  if (Object.keys(problems).length) throw errors.validation(problems);
  return { code: code!, name: name!, description };
}

export async function createSpecialty(tx: Queryable, actor: OrgActor, body: SpecialtyBody) {
  const row = await q.insertSpecialty(tx, actor.orgId, normalize(body, null));
  await audit(tx, actor, 'specialty.created', 'specialty', row.id, { code: row.code });
  await emit(tx, actor.orgId, 'specialty.created', { id: row.id, code: row.code });
  return row;
}

export async function getSpecialty(tx: Queryable, orgId: string, id: string) {
  const row = await q.findSpecialty(tx, orgId, id);
  if (!row) throw notFound();
  return row;
}

export async function listSpecialties(tx: Queryable, orgId: string, query: Record<string, unknown>) {
  const page = parsePagination(query);
  const sort = parseSort(query.sort, SPECIALTY_SORT);
  const created = parseDateRange(query, 'created_at');
  const text = typeof query.q === 'string' ? query.q.trim() : '';
  const { rows, total } = await q.listSpecialties(tx, orgId, { q: text || undefined, created }, sort, page);
  return listEnvelope(rows, page, total);
}

/** PATCH: the fields given; a PATCH that changes nothing writes nothing. */
export async function updateSpecialty(tx: Queryable, actor: OrgActor, id: string, body: SpecialtyBody) {
  if (!Object.keys(body).length) throw errors.validation({ _body: 'give at least one field to change' });
  const current = await q.findSpecialty(tx, actor.orgId, id, true);
  if (!current) throw notFound();
  const next = normalize(body, current);
  const changed = (['code', 'name', 'description'] as const).filter((k) => next[k] !== current[k]);
  if (!changed.length) return current;
  const row = await q.updateSpecialty(tx, actor.orgId, id, next);
  await audit(tx, actor, 'specialty.updated', 'specialty', id, { fields: changed });
  await emit(tx, actor.orgId, 'specialty.updated', { id, changed });
  return row;
}

export async function deleteSpecialty(tx: Queryable, actor: OrgActor, id: string): Promise<void> {
  const row = await q.deleteSpecialty(tx, actor.orgId, id);
  if (!row) throw notFound();
  await audit(tx, actor, 'specialty.deleted', 'specialty', id, { code: row.code });
  await emit(tx, actor.orgId, 'specialty.deleted', { id, code: row.code });
}
