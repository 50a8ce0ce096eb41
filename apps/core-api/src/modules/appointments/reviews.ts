import type { Queryable } from '@clinic/db';
import { errors } from '@clinic/http-kit';
import type { OrgActor } from '../../platform/actor.ts';
import { audit } from '../../platform/audit.ts';
import { isPatientCaller } from '../../platform/identity/context.ts';
import { emit } from '../events/emit.ts';
import * as x from './extras-queries.ts';
import { visibleAppointment } from './files.ts';

/*
 * Reviews (spec 4.5 Appointments): the appointment's patient (or its caregiver) rates a visit that is
 * done, once (409 review_exists, decided by a unique constraint), 1 to 5 with an optional comment. Whoever
 * reads the appointment reads its review at GET /v1/appointments/{id}/reviews.
 */

export async function createReview(tx: Queryable, actor: OrgActor, id: string, body: { rating: number; comment?: string | null }) {
  if (!isPatientCaller(actor.ctx)) throw errors.forbidden("An appointment is reviewed by its patient (or the patient's caregiver).");
  const row = await visibleAppointment(tx, actor.orgId, id);
  if (row.status !== 'done' || row.patient_id === null)
    throw errors.conflict('appointment_not_done', `Only a visit that is done can be reviewed; this appointment is ${row.status}.`);
  const review = await x.insertReview(tx, actor.orgId, {
    appointmentId: id,
    patientId: row.patient_id,
    rating: body.rating,
    comment: body.comment?.trim() || null,
    author: actor.ctx.principalId,
  });
  if (!review) throw errors.conflict('review_exists', 'This appointment has been reviewed already; a visit is reviewed once.');
  // Ids only: the rating and the comment are the person's, and the audit trail is never erased.
  await audit(tx, actor, 'appointment.reviewed', 'appointment', id, { review_id: review.id });
  await emit(tx, actor.orgId, 'appointment.reviewed', { id, review_id: review.id });
  return review;
}

export async function listReviews(tx: Queryable, orgId: string, id: string) {
  const row = await visibleAppointment(tx, orgId, id);
  return { patientId: row.patient_id, reviews: await x.listReviews(tx, orgId, id) };
}
