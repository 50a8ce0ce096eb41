import type { Queryable } from '@clinic/db';
import { type DateRange, type Pagination, type Sort, SqlWhere } from '@clinic/http-kit';
import { pageOf } from '../../platform/page.ts';
import type { Action, Trigger } from './definition.ts';
import { markDeleted } from '../../platform/deleted.ts';

export interface RuleRow {
  id: string;
  organization_id: string;
  name: string;
  description: string | null;
  status: 'active' | 'paused';
  trigger: Trigger;
  conditions: Record<string, unknown> | null;
  actions: Action[];
  version: number;
  created_by_principal_id: string | null;
  created_at: Date;
  updated_at: Date;
}

const R_COLUMNS = `id, organization_id, name, description, status, "trigger", conditions, actions, version, created_by_principal_id, created_at, updated_at`;

export async function insertRule(
  tx: Queryable,
  orgId: string,
  r: Pick<RuleRow, 'name' | 'description' | 'status' | 'trigger' | 'conditions' | 'actions'>,
  principalId: string,
): Promise<RuleRow> {
  const { rows } = await tx.query<RuleRow>(
    `insert into automation_rules (organization_id, name, description, status, "trigger", conditions, actions, created_by_principal_id)
     values ($1, $2, $3, $4, $5, $6, $7, $8) returning ${R_COLUMNS}`,
    [
      orgId,
      r.name,
      r.description,
      r.status,
      JSON.stringify(r.trigger),
      r.conditions === null ? null : JSON.stringify(r.conditions),
      JSON.stringify(r.actions),
      principalId,
    ],
  );
  return rows[0]!;
}

export async function findRule(tx: Queryable, orgId: string, id: string, forUpdate = false): Promise<RuleRow | null> {
  const { rows } = await tx.query<RuleRow>(
    `select ${R_COLUMNS} from automation_rules where organization_id = $1 and id = $2 and deleted_at is null${forUpdate ? ' for update' : ''}`,
    [orgId, id],
  );
  return rows[0] ?? null;
}

export async function saveRule(
  tx: Queryable,
  orgId: string,
  id: string,
  r: Pick<RuleRow, 'name' | 'description' | 'status' | 'trigger' | 'conditions' | 'actions'>,
): Promise<RuleRow> {
  const { rows } = await tx.query<RuleRow>(
    `update automation_rules set name = $3, description = $4, status = $5, "trigger" = $6, conditions = $7, actions = $8, version = version + 1
     where organization_id = $1 and id = $2 returning ${R_COLUMNS}`,
    [
      orgId,
      id,
      r.name,
      r.description,
      r.status,
      JSON.stringify(r.trigger),
      r.conditions === null ? null : JSON.stringify(r.conditions),
      JSON.stringify(r.actions),
    ],
  );
  return rows[0]!;
}

/** `version` is the row's, read FOR UPDATE: `version = version + 1` would read the new row (platform/deleted.ts). */
export async function softDeleteRule(tx: Queryable, orgId: string, id: string, version: number): Promise<void> {
  await markDeleted(tx, 'automation_rules', orgId, id, ', status = $1, version = $2', ['paused', version + 1]);
}

export async function listRules(
  tx: Queryable,
  orgId: string,
  f: { status?: string; trigger_type?: string; created: DateRange; includeDeleted?: boolean },
  sort: Sort,
  page: Pagination,
): Promise<{ rows: RuleRow[]; total: number }> {
  const where = new SqlWhere();
  where.add('organization_id = ?', orgId);
  if (!f.includeDeleted) where.add('deleted_at is null');
  where.optional('status = ?', f.status);
  where.optional('trigger_type = ?', f.trigger_type);
  where.dateRange('created_at', f.created);
  return pageOf(tx, `select ${R_COLUMNS}`, `from automation_rules where ${where.text}`, where, sort, page);
}

export interface ExecutionRow {
  id: string;
  organization_id: string;
  rule_id: string;
  rule_version: number;
  run_id: string;
  trigger_type: string;
  trigger_key: string | null;
  target: string | null;
  action_index: number;
  action_type: string;
  status: string;
  attempts: number;
  error: string | null;
  message_id: string | null;
  created_at: Date;
}

export async function listExecutions(
  tx: Queryable,
  orgId: string,
  f: { rule_id?: string; run_id?: string; status?: string; action_type?: string; patient_id?: string; created: DateRange },
  sort: Sort,
  page: Pagination,
): Promise<{ rows: ExecutionRow[]; total: number }> {
  const where = new SqlWhere();
  where.add('e.organization_id = ?', orgId);
  where.optional('e.rule_id = ?::uuid', f.rule_id);
  where.optional('e.run_id = ?::uuid', f.run_id);
  where.optional('e.status = ?', f.status);
  where.optional('e.action_type = ?', f.action_type);
  where.optional('r.patient_id = ?::uuid', f.patient_id);
  where.dateRange('e.created_at', f.created);
  return pageOf(
    tx,
    `select e.id, e.organization_id, e.rule_id, e.rule_version, e.run_id, e.trigger_type, r.trigger_key, r.target_key as target,
            e.action_index, e.action_type, e.status, e.attempts, e.error, e.message_id, e.created_at`,
    `from automation_executions e left join automation_runs r on r.organization_id = e.organization_id and r.id = e.run_id where ${where.text}`,
    where,
    sort,
    page,
  );
}

export interface SettingsRow {
  quiet_hours_start: string | null;
  quiet_hours_end: string | null;
  time_zone: string;
}

export async function readSettings(tx: Queryable, orgId: string): Promise<SettingsRow> {
  const { rows } = await tx.query<SettingsRow>(
    `select to_char(s.quiet_hours_start, 'HH24:MI') as quiet_hours_start, to_char(s.quiet_hours_end, 'HH24:MI') as quiet_hours_end,
            coalesce((select default_timezone from organization_settings where organization_id = $1), 'UTC') as time_zone
     from (select 1) one left join automation_settings s on s.organization_id = $1`,
    [orgId],
  );
  return rows[0]!;
}

export async function writeSettings(tx: Queryable, orgId: string, start: string | null, end: string | null): Promise<void> {
  await tx.query(
    `insert into automation_settings (organization_id, quiet_hours_start, quiet_hours_end) values ($1, $2::time, $3::time)
     on conflict (organization_id) do update set quiet_hours_start = excluded.quiet_hours_start, quiet_hours_end = excluded.quiet_hours_end, updated_at = now()`,
    [orgId, start, end],
  );
}
