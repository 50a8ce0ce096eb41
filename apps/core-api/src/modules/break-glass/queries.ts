import type { Queryable } from '@clinic/db';
import type { BreakGlassScope } from './schemas.ts';

export interface SessionRow {
  id: string;
  organization_id: string;
  superadmin_user_id: string;
  scope: BreakGlassScope;
  reason_category: string;
  reason_text: string;
  reason_ref: string | null;
  created_at: Date;
  expires_at: Date;
  /** Set when the superadmin ended it before its expiry (POST /v1/break-glass/sessions/{id}/end). */
  ended_at: Date | null;
  /** Computed by the database clock, the one every instance shares. */
  status: 'open' | 'expired';
}

const COLUMNS = `id, organization_id, superadmin_user_id, scope, reason_category, reason_text, reason_ref, created_at, expires_at,
  ended_at, case when ended_at is null and expires_at > now() then 'open' else 'expired' end as status`;

export interface NewSession {
  organization_id: string;
  superadmin_user_id: string;
  scope: BreakGlassScope;
  reason_category: string;
  reason_text: string;
  reason_ref: string | null;
  minutes: number;
}

export async function insertSession(tx: Queryable, s: NewSession): Promise<SessionRow> {
  const { rows } = await tx.query<SessionRow>(
    `insert into break_glass_sessions (organization_id, superadmin_user_id, scope, reason_category, reason_text, reason_ref, expires_at)
     values ($1, $2, $3, $4, $5, $6, now() + make_interval(mins => $7)) returning ${COLUMNS}`,
    [s.organization_id, s.superadmin_user_id, s.scope, s.reason_category, s.reason_text, s.reason_ref, s.minutes],
  );
  return rows[0]!;
}

/** This superadmin's open session for the organization and scope, else their latest one (ended or expired), or null. */
export async function latestSession(tx: Queryable, principalId: string, orgId: string, scope: BreakGlassScope): Promise<SessionRow | null> {
  const { rows } = await tx.query<SessionRow>(
    `select ${COLUMNS} from break_glass_sessions
     where superadmin_user_id = $1 and organization_id = $2 and scope = $3
     order by (ended_at is null and expires_at > now()) desc, expires_at desc limit 1`,
    [principalId, orgId, scope],
  );
  return rows[0] ?? null;
}

/** This superadmin's session by id, or null (another superadmin's is not theirs to see or end). */
export async function findOwnSession(tx: Queryable, principalId: string, id: string): Promise<SessionRow | null> {
  const { rows } = await tx.query<SessionRow>(`select ${COLUMNS} from break_glass_sessions where id = $1 and superadmin_user_id = $2`, [
    id,
    principalId,
  ]);
  return rows[0] ?? null;
}

/** Ends an open session now; null when it had already ended or expired (nothing changes then). */
export async function endSession(tx: Queryable, id: string): Promise<SessionRow | null> {
  const { rows } = await tx.query<SessionRow>(
    `update break_glass_sessions set ended_at = now() where id = $1 and ended_at is null and expires_at > now() returning ${COLUMNS}`,
    [id],
  );
  return rows[0] ?? null;
}

export async function organizationExists(tx: Queryable, orgId: string): Promise<boolean> {
  const { rows } = await tx.query('select 1 from organizations where id = $1', [orgId]);
  return rows.length > 0;
}
