import type { Queryable } from '@clinic/db';
import { errors, isUuid } from '@clinic/http-kit';
import type { RequestContext } from './context.ts';
import { isActiveCaregiver } from './queries.ts';

/**
 * X-Patient-ID: a caregiver acts for a patient it holds an active link to (spec 2.3), at the
 * organization in scope. The request then sees and edits that patient's rows as the patient would
 * (app.current_patient_id()); staff act with their own permissions instead, so the header is for people
 * who are not staff there.
 */
export async function actAsCaregiver(db: Queryable, ctx: RequestContext, header: string): Promise<RequestContext> {
  const patientId = header.trim().toLowerCase();
  if (!isUuid(patientId)) throw errors.validation({ 'X-Patient-ID': 'must be the id of a patient record (uuid)' });
  if (!ctx.orgId) throw errors.validation({ 'X-Organization-ID': 'required with X-Patient-ID: the clinic of that patient' });
  if (ctx.isStaff || ctx.isSuperadmin)
    throw errors.forbidden('Staff act with their own permissions; X-Patient-ID is for caregivers acting for a patient.');
  if (!(await isActiveCaregiver(db, ctx.orgId, patientId, ctx.principalId)))
    throw errors.forbidden('You are not an active caregiver of this patient at this organization.');
  return { ...ctx, isPatient: true, actingForPatientId: patientId };
}
