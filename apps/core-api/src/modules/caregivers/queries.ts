import { isUniqueViolation, type Queryable } from '@clinic/db';
import { errors } from '@clinic/http-kit';

export interface LinkRow {
  id: string;
  organization_id: string;
  patient_id: string;
  caregiver_user_id: string;
  caregiver_email: string | null;
  relationship: string | null;
  approved_by: 'patient' | 'staff';
  created_at: Date;
  revoked_at: Date | null;
}

const COLUMNS = `l.id, l.organization_id, l.patient_id, l.caregiver_user_id, app.caregiver_email(l.organization_id, l.id) as caregiver_email,
  l.relationship, l.approved_by, l.created_at, l.revoked_at`;

// Every statement names the organization: superadmins run on app_bypass, where no policy narrows rows.

/** The live patient record, as the caller's policies show it, with its person. */
export async function findPatient(tx: Queryable, orgId: string, id: string): Promise<{ id: string; user_id: string } | null> {
  const { rows } = await tx.query<{ id: string; user_id: string }>(
    'select id, user_id from patients where organization_id = $1 and id = $2 and deleted_at is null',
    [orgId, id],
  );
  return rows[0] ?? null;
}

export async function ensureCaregiverUser(tx: Queryable, email: string): Promise<string | null> {
  const { rows } = await tx.query<{ id: string | null }>('select app.ensure_caregiver_user($1) as id', [email]);
  return rows[0]!.id;
}

export async function insertLink(
  tx: Queryable,
  l: {
    orgId: string;
    patientId: string;
    caregiverUserId: string;
    relationship: string | null;
    approvedBy: 'patient' | 'staff';
    by: string;
  },
): Promise<string> {
  try {
    const { rows } = await tx.query<{ id: string }>(
      `insert into caregiver_links (organization_id, patient_id, caregiver_user_id, relationship, approved_by, created_by_user_id)
       values ($1, $2, $3, $4, $5, $6) returning id`,
      [l.orgId, l.patientId, l.caregiverUserId, l.relationship, l.approvedBy, l.by],
    );
    return rows[0]!.id;
  } catch (err) {
    if (isUniqueViolation(err)) throw errors.conflict('caregiver_exists', 'This person is already a caregiver of this patient.');
    throw err;
  }
}

export async function findLink(tx: Queryable, orgId: string, patientId: string, id: string): Promise<LinkRow | null> {
  const { rows } = await tx.query<LinkRow>(
    `select ${COLUMNS} from caregiver_links l where l.organization_id = $1 and l.patient_id = $2 and l.id = $3`,
    [orgId, patientId, id],
  );
  return rows[0] ?? null;
}

/** The patient's active links. */
export async function listLinks(tx: Queryable, orgId: string, patientId: string): Promise<LinkRow[]> {
  const { rows } = await tx.query<LinkRow>(
    `select ${COLUMNS} from caregiver_links l
     where l.organization_id = $1 and l.patient_id = $2 and l.revoked_at is null order by l.created_at, l.id`,
    [orgId, patientId],
  );
  return rows;
}

/** Revokes an active link the caller may revoke; false when there is none. */
export async function revokeLink(tx: Queryable, orgId: string, id: string, by: string): Promise<boolean> {
  const { rowCount } = await tx.query(
    `update caregiver_links set revoked_at = now(), revoked_by_user_id = $3
     where organization_id = $1 and id = $2 and revoked_at is null`,
    [orgId, id, by],
  );
  return rowCount > 0;
}

export interface CaregivingRow {
  id: string;
  organization_id: string;
  organization_name: string;
  patient_id: string;
  first_name: string | null;
  last_name: string | null;
  relationship: string | null;
  created_at: Date;
}

export async function myCaregiving(tx: Queryable): Promise<CaregivingRow[]> {
  const { rows } = await tx.query<CaregivingRow>('select * from app.my_caregiving()');
  return rows;
}
