import type { RequestScope } from './types.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const PERMISSION_CODE = /^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$/;
export const NIL_UUID = '00000000-0000-0000-0000-000000000000';

/**
 * The statement that opens every request transaction, in the style of PostgREST: role and tenant as
 * transaction-local settings, so nothing leaks to the next user of a pooled connection.
 * Values are validated here (not escaped), because they come from our own context query.
 */
export function scopeStatement(scope: RequestScope): { text: string; params: string[] } {
  if (scope.role !== 'app_rls' && scope.role !== 'app_bypass') throw new Error(`unknown role ${String(scope.role)}`);
  const principal = scope.principalId ?? '';
  const org = scope.orgId ?? NIL_UUID;
  if (principal !== '' && !UUID.test(principal)) throw new Error('principal id is not a uuid');
  if (!UUID.test(org)) throw new Error('organization id is not a uuid');
  for (const code of scope.permissions) {
    if (!PERMISSION_CODE.test(code)) throw new Error(`malformed permission code ${code}`);
  }
  return {
    text:
      "select set_config('role', $1, true), set_config('app.principal_id', $2, true), " +
      "set_config('app.org_id', $3, true), set_config('app.permissions', $4, true)",
    params: [scope.role, principal, org, scope.permissions.join(',')],
  };
}
