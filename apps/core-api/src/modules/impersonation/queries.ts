import type { Queryable } from '@clinic/db';

export interface SessionRow {
  id: string;
  organization_id: string;
  patient_id: string;
  staff_user_id: string;
  reason: string;
  started_at: Date;
  expires_at: Date;
  ended_at: Date | null;
}

const COLUMNS = 'id, organization_id, patient_id, staff_user_id, reason, started_at, expires_at, ended_at';

/** The live patient record and its person, as the caller's policies show it. */
export async function findPatientPerson(tx: Queryable, orgId: string, patientId: string): Promise<{ user_id: string } | null> {
  const { rows } = await tx.query<{ user_id: string }>(
    'select user_id from patients where organization_id = $1 and id = $2 and deleted_at is null',
    [orgId, patientId],
  );
  return rows[0] ?? null;
}

export async function insertSession(
  tx: Queryable,
  s: { orgId: string; patientId: string; patientUserId: string; staffUserId: string; reason: string; tokenHash: string; minutes: number },
): Promise<SessionRow> {
  const { rows } = await tx.query<SessionRow>(
    `insert into impersonation_sessions (organization_id, patient_id, patient_user_id, staff_user_id, reason, token_hash, expires_at)
     values ($1, $2, $3, $4, $5, $6, now() + make_interval(mins => $7)) returning ${COLUMNS}`,
    [s.orgId, s.patientId, s.patientUserId, s.staffUserId, s.reason, s.tokenHash, s.minutes],
  );
  return rows[0]!;
}

/** Ends a session of the caller's that is still open; null when there is none. */
export async function endSession(tx: Queryable, orgId: string, id: string, by: string): Promise<SessionRow | null> {
  const { rows } = await tx.query<SessionRow>(
    `update impersonation_sessions set ended_at = now(), ended_by_user_id = $3
     where organization_id = $1 and id = $2 and staff_user_id = $3 and ended_at is null and expires_at > now() returning ${COLUMNS}`,
    [orgId, id, by],
  );
  return rows[0] ?? null;
}

export async function findSession(tx: Queryable, orgId: string, id: string): Promise<SessionRow | null> {
  const { rows } = await tx.query<SessionRow>(`select ${COLUMNS} from impersonation_sessions where organization_id = $1 and id = $2`, [
    orgId,
    id,
  ]);
  return rows[0] ?? null;
}
