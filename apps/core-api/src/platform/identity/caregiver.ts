import type { Queryable } from '@clinic/db';
import { AppError, errors, isUuid } from '@clinic/http-kit';
import type { MissingConsent, RequestContext } from './context.ts';
import { isActiveCaregiver, patientMissingOrgConsents } from './queries.ts';

/**
 * X-Patient-ID: a caregiver acts for a patient it holds an active link to (spec 2.3), at the
 * organization in scope. The request then sees and edits that patient's rows as the patient would
 * (app.current_patient_id()); staff act with their own permissions instead, so the header is for people
 * who are not staff there.
 *
 * Who accepts what: the patient's acceptance of the clinic's required purposes governs the patient's
 * data, so `patientMissing` lists what the patient (or the clinic's staff for it) has yet to accept; the
 * caregiver's own re-consent gate asks only for what applies to the caregiver (platform purposes).
 */
export async function actAsCaregiver(
  db: Queryable,
  ctx: RequestContext,
  header: string,
  consentGate = true,
): Promise<{ ctx: RequestContext; patientMissing: MissingConsent[] }> {
  const patientId = header.trim().toLowerCase();
  if (!isUuid(patientId)) throw errors.validation({ 'X-Patient-ID': 'must be the id of a patient record (uuid)' });
  if (!ctx.orgId) throw errors.validation({ 'X-Organization-ID': 'required with X-Patient-ID: the clinic of that patient' });
  if (ctx.isStaff || ctx.isSuperadmin)
    throw errors.forbidden('Staff act with their own permissions; X-Patient-ID is for caregivers acting for a patient.');
  if (!(await isActiveCaregiver(db, ctx.orgId, patientId, ctx.principalId)))
    throw errors.forbidden('You are not an active caregiver of this patient at this organization.');
  const patientMissing = consentGate ? await patientMissingOrgConsents(db, ctx.orgId, patientId) : [];
  return { ctx: { ...ctx, isPatient: true, actingForPatientId: patientId }, patientMissing };
}

/**
 * The patient a caregiver acts for has not accepted the clinic's required purposes: only the patient, or
 * the clinic's staff recording it for the patient, can give that acceptance, so it is not the caregiver's
 * 412 but a refusal naming who can act (the feature-level shape of spec 4.6 rule 4).
 */
export function patientConsentRequired(patientId: string, missing: MissingConsent[]): AppError {
  const codes = missing.map((m) => m.purpose_code).join(', ');
  return new AppError(
    403,
    'consent_required',
    `The patient has not accepted the clinic's ${codes}. The patient accepts it in the portal (POST /v1/me/consents), or the clinic's staff record the patient's acceptance; a caregiver cannot accept it for the patient.`,
    { extra: { missing_purpose: missing[0]!.purpose_code, patient_id: patientId, missing } },
  );
}
