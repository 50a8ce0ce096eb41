import type { RequestScope } from './types.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const PERMISSION_CODE = /^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$/;
export const NIL_UUID = '00000000-0000-0000-0000-000000000000';

/**
 * The statement that opens every request transaction, in the style of PostgREST: role and tenant as
 * transaction-local settings, so nothing leaks to the next user of a pooled connection.
 * Values are validated here (not escaped), because they come from our own context query.
 */
export function scopeStatement(scope: RequestScope): { name: string; text: string; params: string[] } {
  const { principal, org, acting } = validated(scope);
  const text =
    "select set_config('role', $1, true), set_config('app.principal_id', $2, true), " +
    "set_config('app.org_id', $3, true), set_config('app.permissions', $4, true), set_config('app.acting_patient_id', $5, true)";
  const params = [scope.role, principal, org, scope.permissions.join(','), acting];
  const timeout = scope.statementTimeoutMs;
  if (timeout === undefined) return { name: 'app_scope', text, params };
  if (!Number.isInteger(timeout) || timeout < 1) throw new Error('statement time-out is not a positive integer');
  // In the same statement: a budget costs no round trip. A prepared statement's name belongs to one text.
  return { name: 'app_scope_timed', text: `${text}, set_config('statement_timeout', $6, true)`, params: [...params, String(timeout)] };
}

function validated(scope: RequestScope): { principal: string; org: string; acting: string } {
  if (scope.role !== 'app_rls' && scope.role !== 'app_bypass') throw new Error(`unknown role ${String(scope.role)}`);
  const principal = scope.principalId ?? '';
  const org = scope.orgId ?? NIL_UUID;
  if (principal !== '' && !UUID.test(principal)) throw new Error('principal id is not a uuid');
  if (!UUID.test(org)) throw new Error('organization id is not a uuid');
  for (const code of scope.permissions) {
    if (!PERMISSION_CODE.test(code)) throw new Error(`malformed permission code ${code}`);
  }
  const acting = scope.actingPatientId ?? '';
  if (acting !== '' && !UUID.test(acting)) throw new Error('acting patient id is not a uuid');
  return { principal, org, acting };
}

/**
 * The same scope as `SET LOCAL` statements, for a Citus coordinator (docs/scaling.md): settings made with
 * set_config() stay on the coordinator, so row-level security on the workers would see no organization;
 * `SET LOCAL` with citus.propagate_set_commands = 'local' reaches every worker connection of the transaction.
 * SET takes no parameters: the values are inlined, which is safe because validated() admits only uuids, the
 * two role names and permission codes (letters, digits, '_' and one '.'), none of which can hold a quote.
 * Several statements in one simple-protocol message: still the one round trip of the request.
 */
export function scopeSetStatements(scope: RequestScope): string {
  const { principal, org, acting } = validated(scope);
  const set = (name: string, value: string) => `set local ${name} = '${value}'`;
  const statements = [
    "set local citus.propagate_set_commands = 'local'",
    set('role', scope.role),
    set('app.principal_id', principal),
    set('app.org_id', org),
    set('app.permissions', scope.permissions.join(',')),
    set('app.acting_patient_id', acting),
  ];
  const timeout = scope.statementTimeoutMs;
  if (timeout !== undefined) {
    if (!Number.isInteger(timeout) || timeout < 1) throw new Error('statement time-out is not a positive integer');
    statements.push(set('statement_timeout', String(timeout)));
  }
  return statements.join('; ');
}
