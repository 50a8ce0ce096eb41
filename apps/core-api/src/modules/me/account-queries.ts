import type { Queryable } from '@clinic/db';
import { errors } from '@clinic/http-kit';
import { lastAdmin } from '../members/queries.ts';

/** A ledger row withdrawn by a cascade, as the SQL functions of migration 0009 report it. */
export interface WithdrawnRow {
  id: string;
  organization_id: string | null;
  patient_profile_id: string;
  purpose_code: string;
  purpose_version: number;
  source: string;
  withdrawal_reason: string | null;
}

export interface LeaveResult {
  patient_id: string;
  withdrawn: WithdrawnRow[];
}

export interface EraseResult {
  anonymised: boolean;
  withdrawn: WithdrawnRow[];
  patients_deleted: { id: string; organization_id: string }[];
  memberships_removed: { organization_id: string; role_id: string }[];
  // What app.erase_patient_records adds (migrations 0027 and 0059): records, forms and telemetry.
  form_files_removed?: { id: string; organization_id: string; form_id: string; asset_key: string }[];
  forms_erased?: { id: string; organization_id: string }[];
  signed_forms_retained?: { id: string; organization_id: string }[];
  patient_records_cleared?: { id: string; organization_id: string; identity_retained: boolean }[];
  specialists_removed?: { id: string; organization_id: string }[];
  exercise_sessions_removed?: { id: string; organization_id: string; replay_key: string | null }[];
  media_sessions_removed?: number;
  // Migration 0068: appointments.
  appointment_files_removed?: { id: string; organization_id: string; appointment_id: string; asset_key: string }[];
  appointment_reviews_removed?: number;
  appointments_cancelled?: { id: string; organization_id: string }[];
  appointments_cleared?: number;
  // Migration 0100: documents (those of signed forms and published ones are retained).
  documents_removed?: { id: string; organization_id: string; asset_key: string | null }[];
  documents_retained?: { id: string; organization_id: string }[];
  // Migration 0085: telerehab (plan sessions, enrollments and the plans written for the person).
  plan_sessions_removed?: number;
  treatment_enrollments_removed?: { id: string; organization_id: string }[];
  treatment_plans_removed?: { id: string; organization_id: string }[];
  // Migration 0093: messages and automations (message texts and addresses cleared, queued runs cancelled).
  automation_runs_cancelled?: number;
  messages_cleared?: number;
  patient_tags_removed?: number;
  segment_memberships_removed?: number;
}

/** The stored objects an erasure let go (form and appointment files, documents, pose replays): the caller deletes them after commit. */
export function erasedObjectKeys(r: EraseResult): string[] {
  return [
    ...(r.form_files_removed ?? []).map((f) => f.asset_key),
    ...(r.appointment_files_removed ?? []).map((f) => f.asset_key),
    ...(r.documents_removed ?? []).flatMap((d) => (d.asset_key ? [d.asset_key] : [])),
    ...(r.exercise_sessions_removed ?? []).flatMap((s) => (s.replay_key ? [s.replay_key] : [])),
  ];
}

const messageOf = (err: unknown) => (err instanceof Error ? err.message : '');

/** See app.leave_clinic: soft-deletes the caller's patients row at org and withdraws its consents there. */
export async function leaveClinicRows(tx: Queryable, orgId: string): Promise<LeaveResult> {
  try {
    const { rows } = await tx.query<{ r: LeaveResult }>('select app.leave_clinic($1) as r', [orgId]);
    return rows[0]!.r;
  } catch (err) {
    if (messageOf(err).includes('not_a_patient')) throw errors.notFound('You are not a patient of this organization.');
    throw err;
  }
}

/**
 * See app.erase_user: org null erases the whole account (the person itself or a superadmin); org set
 * erases what that clinic holds (gdpr.erase_data there), and the account too when nothing else links
 * the person to the platform.
 */
export async function eraseUserRows(tx: Queryable, userId: string, orgId: string | null, reason: string): Promise<EraseResult> {
  try {
    const { rows } = await tx.query<{ r: EraseResult }>('select app.erase_user($1, $2, $3) as r', [userId, orgId, reason]);
    return rows[0]!.r;
  } catch (err) {
    const message = messageOf(err);
    const admin = /last_admin:([0-9a-f-]{36})/.exec(message);
    if (admin) throw lastAdmin(`Erasing this account (the last administrator of organization ${admin[1]})`);
    if (message.includes('subject_not_found')) throw errors.notFound('No such data subject here.');
    if (message.includes('erase_not_allowed')) throw errors.forbidden('You may not erase this data subject.');
    if (message.includes('not_human')) throw errors.forbidden('Agents and service accounts are removed by their organization, not erased.');
    throw err;
  }
}
