import type { Queryable } from '@clinic/db';
import { errors, listEnvelope, parseDateRange, parseFilters, parsePagination, parseSort, isUuid } from '@clinic/http-kit';
import type { OrgActor } from '../../platform/actor.ts';
import { audit } from '../../platform/audit.ts';
import { emit } from '../events/emit.ts';
import { type Action, assertNoProblems, checkActions, checkConditions, checkReferences, checkTrigger } from './definition.ts';
import * as q from './queries.ts';
import { EXECUTION_SORT, RULE_SORT } from './schemas.ts';

const notFound = () => errors.notFound('No automation rule with this id in this organization.');

export interface RuleBody {
  name: string;
  description?: string | null;
  status?: 'active' | 'paused';
  trigger: Record<string, unknown>;
  conditions?: Record<string, unknown> | null;
  actions: Record<string, unknown>[];
}

/** Everything a rule says, checked as a whole: one 400 lists every problem. */
async function checked(tx: Queryable, orgId: string, body: RuleBody) {
  const problems: Record<string, string> = {};
  const name = body.name.trim();
  if (!name) problems.name = 'must not be blank';
  const trigger = checkTrigger(body.trigger, problems);
  const actions = checkActions(body.actions, problems);
  await checkReferences(tx, orgId, trigger, actions, problems);
  await checkConditions(tx, orgId, body.conditions, problems);
  assertNoProblems(problems);
  return {
    name,
    description: body.description ?? null,
    status: body.status ?? 'active',
    trigger: trigger!,
    conditions: body.conditions ?? null,
    actions: actions.filter((a): a is Action => a !== null),
  };
}

export async function createRule(tx: Queryable, actor: OrgActor, body: RuleBody): Promise<q.RuleRow> {
  const rule = await checked(tx, actor.orgId, body);
  const row = await q.insertRule(tx, actor.orgId, rule, actor.ctx.principalId);
  await audit(tx, actor, 'automation_rule.created', 'automation_rule', row.id, {
    name: row.name,
    status: row.status,
    trigger: row.trigger,
    conditions: row.conditions,
    actions: row.actions,
    version: row.version,
  });
  await emit(tx, actor.orgId, 'automation_rule.created', { id: row.id, trigger_type: row.trigger.type, status: row.status });
  return row;
}

export async function getRule(tx: Queryable, orgId: string, id: string): Promise<q.RuleRow> {
  const row = await q.findRule(tx, orgId, id);
  if (!row) throw notFound();
  return row;
}

/**
 * PATCH: the changed fields, checked with the rest as a whole. Every change moves the version and is audited
 * with the full before and after of what changed (rules are versioned through their audit trail); runs
 * already made keep the version they were made with.
 */
export async function updateRule(tx: Queryable, actor: OrgActor, id: string, body: Partial<RuleBody>): Promise<q.RuleRow> {
  if (!Object.keys(body).length) throw errors.validation({ _body: 'give at least one field to change' });
  const current = await q.findRule(tx, actor.orgId, id, true);
  if (!current) throw notFound();
  const next = await checked(tx, actor.orgId, {
    name: body.name ?? current.name,
    description: body.description !== undefined ? body.description : current.description,
    status: body.status ?? current.status,
    trigger: (body.trigger ?? current.trigger) as Record<string, unknown>,
    conditions: body.conditions !== undefined ? body.conditions : current.conditions,
    actions: (body.actions ?? current.actions) as Record<string, unknown>[],
  });
  const keys = ['name', 'description', 'status', 'trigger', 'conditions', 'actions'] as const;
  const changed = keys.filter((k) => JSON.stringify(next[k]) !== JSON.stringify(current[k]));
  if (!changed.length) return current;
  const row = await q.saveRule(tx, actor.orgId, id, next);
  await audit(tx, actor, 'automation_rule.updated', 'automation_rule', id, {
    version: row.version,
    changes: Object.fromEntries(changed.map((k) => [k, { from: current[k], to: next[k] }])),
  });
  await emit(tx, actor.orgId, 'automation_rule.updated', { id, changed, status: row.status, version: row.version });
  return row;
}

/** Deleted rules stay for their trail (runs and executions name them) and never fire again. */
export async function deleteRule(tx: Queryable, actor: OrgActor, id: string): Promise<void> {
  const current = await q.findRule(tx, actor.orgId, id, true);
  if (!current) throw notFound();
  await q.softDeleteRule(tx, actor.orgId, id, current.version);
  await audit(tx, actor, 'automation_rule.deleted', 'automation_rule', id, { name: current.name, version: current.version });
  await emit(tx, actor.orgId, 'automation_rule.deleted', { id });
}

export async function listRules(tx: Queryable, orgId: string, query: Record<string, unknown>, includeDeleted = false) {
  const page = parsePagination(query);
  const sort = parseSort(query.sort, RULE_SORT);
  const f = parseFilters(query, ['status', 'trigger_type'] as const);
  const { rows, total } = await q.listRules(tx, orgId, { ...f, created: parseDateRange(query, 'created_at'), includeDeleted }, sort, page);
  return listEnvelope(rows, page, total);
}

export async function listExecutions(tx: Queryable, orgId: string, query: Record<string, unknown>) {
  const page = parsePagination(query);
  const sort = parseSort(query.sort, EXECUTION_SORT, '-created_at', 'e.id');
  const f = parseFilters(query, ['rule_id', 'run_id', 'status', 'action_type', 'patient_id'] as const);
  const bad = (['rule_id', 'run_id', 'patient_id'] as const).filter((k) => f[k] !== undefined && !isUuid(f[k]!));
  if (bad.length) throw errors.queryValidation(Object.fromEntries(bad.map((k) => [k, 'must be a UUID'])));
  const { rows, total } = await q.listExecutions(tx, orgId, { ...f, created: parseDateRange(query, 'created_at') }, sort, page);
  return listEnvelope(rows, page, total);
}

export const getSettings = (tx: Queryable, orgId: string) => q.readSettings(tx, orgId);

export async function putSettings(
  tx: Queryable,
  actor: OrgActor,
  body: { quiet_hours_start: string | null; quiet_hours_end: string | null },
) {
  const { quiet_hours_start: start, quiet_hours_end: end } = body;
  if ((start === null) !== (end === null)) throw errors.validation({ quiet_hours_end: 'give both bounds, or null for both' });
  if (start !== null && start === end) throw errors.validation({ quiet_hours_end: 'must differ from quiet_hours_start' });
  const before = await q.readSettings(tx, actor.orgId);
  await q.writeSettings(tx, actor.orgId, start, end);
  await audit(tx, actor, 'automation_settings.updated', 'automation_settings', actor.orgId, {
    quiet_hours: { from: [before.quiet_hours_start, before.quiet_hours_end], to: [start, end] },
  });
  return q.readSettings(tx, actor.orgId);
}
