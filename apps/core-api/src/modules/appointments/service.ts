import type { Queryable } from '@clinic/db';
import { AppError, errors, listEnvelope, parseDateRange, parsePagination, parseSort } from '@clinic/http-kit';
import type { Actor, OrgActor } from '../../platform/actor.ts';
import { audit, recordChange } from '../../platform/audit.ts';
import { hasPermission, isPatientCaller } from '../../platform/identity/context.ts';
import { featureConsentMissing } from '../consents/service.ts';
import { hasActiveConsent } from '../consents/queries.ts';
import { emit } from '../events/emit.ts';
import { type Booker, occupied, resolveSlot, type Target } from './booking.ts';
import { type Intake, intakeOf } from './intake.ts';
import * as q from './queries.ts';
import { APPOINTMENT_SORT } from './schemas.ts';

const notFound = () => errors.notFound('No appointment with this id in this organization.');

/**
 * The moves of the state machine (docs/scheduling.md). `rescheduled` comes only from a reschedule
 * (a new appointment takes the time), `no_show` also from the sweep after the end.
 */
export const MOVES: Record<q.Status, q.Status[]> = {
  scheduled: ['confirmed', 'checked_in', 'cancelled', 'no_show'],
  confirmed: ['checked_in', 'cancelled', 'no_show'],
  checked_in: ['in_progress', 'done'],
  in_progress: ['done'],
  done: [],
  cancelled: [],
  no_show: [],
  rescheduled: [],
};

export const invalidTransition = (from: q.Status, to: q.Status) =>
  new AppError(
    409,
    'invalid_transition',
    `An appointment that is ${from} cannot become ${to}${MOVES[from].length ? ` (it can become: ${MOVES[from].join(', ')})` : ''}.`,
  );

/** What a caller sees: a patient (or its caregiver) gets no staff notes. */
export function present(row: q.AppointmentRow, patientCaller: boolean) {
  const { notes, ...rest } = row;
  return patientCaller ? rest : { ...rest, notes };
}

/** Video visits need the patient's telemedicine consent (spec 2.8): 403 consent_required with missing_purpose. */
async function requireTelemedicine(tx: Queryable, orgId: string, patientUserId: string | null, mode: string): Promise<void> {
  if (mode !== 'video' || !patientUserId) return;
  if (!(await hasActiveConsent(tx, patientUserId, orgId, 'telemedicine'))) throw featureConsentMissing('telemedicine');
}

/** The caller's own specialist profile at the organization in scope, if any. */
async function ownSpecialistId(tx: Queryable): Promise<string | null> {
  const { rows } = await tx.query<{ id: string | null }>('select app.own_specialist_id() as id');
  return rows[0]?.id ?? null;
}

/**
 * Staff who see only their own appointments (appointments.view_own, not view_org) book and move them on
 * their own calendar only: an appointment they could not read back would be made blind (and its answer
 * could not be read under the row policies).
 */
function requireVisibleSpecialist(actor: OrgActor, specialistId: string, own: string | null): void {
  if (!hasPermission(actor.ctx, 'appointments.view_org') && specialistId !== own)
    throw errors.forbidden("Booking on another specialist's calendar needs appointments.view_org.");
}

async function patientPerson(tx: Queryable, orgId: string, patientId: string): Promise<string> {
  const { rows } = await tx.query<{ user_id: string }>(
    'select user_id from patients where organization_id = $1 and id = $2 and deleted_at is null',
    [orgId, patientId],
  );
  if (!rows[0]) throw errors.queryValidation({ patient_id: 'no live patient record with this id here' });
  return rows[0].user_id;
}

/** Inserts the appointment of a resolved slot and claims its time; events and audit. */
export async function bookTarget(
  tx: Queryable,
  actor: Actor | null,
  orgId: string,
  t: Target,
  who: {
    source: 'staff' | 'patient' | 'guest';
    patientId: string | null;
    guest?: { name: string; email: string; phone: string | null; consents: unknown[] } | null;
    notes?: string | null;
    patientNote?: string | null;
    rescheduledFrom?: string | null;
    holdId?: string | null;
    intake?: Intake | null;
  },
): Promise<q.AppointmentRow> {
  const id = await q.insertAppointment(tx, {
    orgId,
    serviceId: t.service.id,
    specialistId: t.specialistId,
    locationId: t.locationId,
    patientId: who.patientId,
    startsAt: t.start,
    endsAt: t.end,
    bufferBefore: t.service.buffer_before_minutes,
    bufferAfter: t.service.buffer_after_minutes,
    cancellationWindow: t.service.cancellation_window_minutes,
    mode: t.service.mode,
    source: who.source,
    guest: who.guest ?? null,
    intake: who.intake ?? null,
    notes: who.notes ?? null,
    patientNote: who.patientNote ?? null,
    rescheduledFrom: who.rescheduledFrom ?? null,
    by: actor?.ctx.principalId ?? null,
  });
  if (who.holdId) await q.claimFromHold(tx, orgId, who.holdId, id);
  else await q.claim(tx, { orgId, calendarId: t.calendarId, ...occupied(t, t.service), appointmentId: id });
  const row = (await q.findAppointment(tx, orgId, id))!;
  await recordChange(
    tx,
    actor,
    'appointment.created',
    { type: 'appointment', id, organizationId: orgId },
    {
      source: who.source,
      service_id: t.service.id,
      specialist_id: t.specialistId,
      starts_at: t.start,
      ...(who.rescheduledFrom ? { rescheduled_from: who.rescheduledFrom } : {}),
    },
  );
  const data = { id, service_id: t.service.id, specialist_id: t.specialistId, patient_id: who.patientId, starts_at: t.start.toISOString() };
  await emit(tx, orgId, 'appointment.created', data);
  if (!(await q.bookedBefore(tx, orgId, id, { patientId: who.patientId, email: who.guest?.email ?? null })))
    await emit(tx, orgId, 'appointment.first_booked', data);
  return row;
}

export interface CreateBody {
  service_id: string;
  specialist_id: string;
  location_id?: string | null;
  start: string;
  patient_id?: string;
  notes?: string | null;
  patient_note?: string | null;
  intake?: Record<string, unknown>;
}

/**
 * POST /v1/appointments: staff with appointments.create book for a patient of the organization (any
 * service, any free time); a patient (or its caregiver) books for itself the public services, within
 * the booking rules. Video visits need the patient's telemedicine consent.
 */
export async function createAppointment(tx: Queryable, actor: OrgActor, body: CreateBody) {
  const ctx = actor.ctx;
  const staff = hasPermission(ctx, 'appointments.create');
  let patientId: string;
  let booker: Booker;
  if (staff) {
    if (!body.patient_id) throw errors.validation({ patient_id: 'required: the patient this appointment is for' });
    patientId = body.patient_id.toLowerCase();
    booker = 'staff';
    requireVisibleSpecialist(actor, body.specialist_id.toLowerCase(), await ownSpecialistId(tx));
  } else if (isPatientCaller(ctx)) {
    const { rows } = await tx.query<{ id: string | null }>('select app.current_patient_id() as id');
    if (!rows[0]?.id) throw errors.forbidden('Book as a patient of this organization (or with X-Patient-ID as its caregiver).');
    patientId = rows[0].id;
    if (body.patient_id && body.patient_id.toLowerCase() !== patientId) throw errors.forbidden('A patient books for itself.');
    booker = 'patient';
  } else throw errors.forbidden('This needs appointments.create, or a patient of the organization booking for itself.');
  const userId = await patientPerson(tx, actor.orgId, patientId);
  const target = await resolveSlot(tx, actor.orgId, body, booker);
  await requireTelemedicine(tx, actor.orgId, userId, target.service.mode);
  const intake = await intakeOf(tx, actor.orgId, target.service.intake_form_template_id, body.intake);
  const row = await bookTarget(tx, actor, actor.orgId, target, {
    source: booker === 'staff' ? 'staff' : 'patient',
    patientId,
    notes: staff ? (body.notes?.trim() ?? null) || null : null,
    patientNote: body.patient_note?.trim() || null,
    intake,
  });
  return present(row, !staff);
}

export async function getAppointment(tx: Queryable, orgId: string, id: string, patientCaller: boolean) {
  const row = await q.findAppointment(tx, orgId, id);
  if (!row) throw notFound();
  return present(row, patientCaller);
}

const STATUSES = new Set(Object.keys(MOVES));

export async function listAppointments(tx: Queryable, orgId: string, query: Record<string, unknown>, patientCaller: boolean) {
  const page = parsePagination(query);
  const sort = parseSort(query.sort, APPOINTMENT_SORT, 'starts_at', 'a.id');
  const raw = typeof query.status === 'string' && query.status ? query.status.split(',').map((s) => s.trim()) : [];
  const upcoming = raw.includes('upcoming');
  const status = raw.filter((s) => s !== 'upcoming');
  const bad = status.filter((s) => !STATUSES.has(s));
  if (bad.length) throw errors.queryValidation({ status: `unknown: ${bad.join(', ')}; one of ${[...STATUSES, 'upcoming'].join(', ')}` });
  const str = (k: string) => (typeof query[k] === 'string' && query[k] ? (query[k] as string) : undefined);
  const { rows, total } = await q.listAppointments(
    tx,
    orgId,
    {
      status: status as q.Status[],
      upcoming,
      specialistId: str('specialist_id'),
      patientId: str('patient_id'),
      locationId: str('location_id'),
      serviceId: str('service_id'),
      starts: parseDateRange(query, 'starts_at'),
    },
    sort,
    page,
  );
  return listEnvelope(
    rows.map((r) => present(r, patientCaller)),
    page,
    total,
  );
}

export interface PatchBody {
  status?: q.Status;
  cancellation_reason?: string | null;
  start?: string;
  specialist_id?: string;
  location_id?: string | null;
  notes?: string | null;
  patient_note?: string | null;
  patient_id?: string | null;
}

/** Who may do what to one appointment: the clinic's staff, its specialist, or its patient. */
function roleOn(actor: OrgActor, row: q.AppointmentRow, own: string | null) {
  const ctx = actor.ctx;
  const mine = row.specialist_id !== null && row.specialist_id === own;
  return {
    update: hasPermission(ctx, 'appointments.update_org') || (mine && hasPermission(ctx, 'appointments.update_own')),
    cancel: hasPermission(ctx, 'appointments.cancel_org') || (mine && hasPermission(ctx, 'appointments.cancel_own')),
    patient: isPatientCaller(ctx),
  };
}

/**
 * PATCH /v1/appointments/{id}: a status move of the state machine (409 invalid_transition otherwise), a
 * reschedule (`start`, optionally another specialist or location: a new appointment takes the time and
 * this one becomes `rescheduled`, keeping its history), or details (notes, the patient's note, tying a
 * guest booking to a patient record). A patient cancels or reschedules its own only before the
 * service's cancellation window.
 */
export async function patchAppointment(tx: Queryable, actor: OrgActor, id: string, body: PatchBody) {
  const row = await q.findAppointment(tx, actor.orgId, id, true);
  if (!row) throw notFound();
  const own = await ownSpecialistId(tx);
  const may = roleOn(actor, row, own);
  if (!may.update && !may.cancel && !may.patient) throw errors.forbidden('You may not change this appointment.');
  const windowClosed = () => row.starts_at.getTime() - Date.now() < row.cancellation_window_minutes * 60_000;
  if (body.start !== undefined || body.specialist_id !== undefined) return reschedule(tx, actor, row, body, may, windowClosed(), own);

  if (body.status !== undefined && body.status !== row.status) {
    const to = body.status;
    if (!MOVES[row.status].includes(to)) throw invalidTransition(row.status, to);
    if (to === 'cancelled') {
      if (!may.cancel && !may.patient) throw errors.forbidden('Cancelling needs appointments.cancel_org (or cancel_own).');
      if (!may.cancel && windowClosed())
        throw errors.conflict(
          'cancellation_window_passed',
          `Appointments of this service are cancelled at least ${row.cancellation_window_minutes} minutes ahead; call the clinic.`,
        );
    } else if (to === 'confirmed') {
      if (!may.update && !may.patient) throw errors.forbidden('Confirming needs appointments.update_org (or update_own).');
    } else if (!may.update) throw errors.forbidden(`Marking it ${to} needs appointments.update_org (or update_own).`);
    await q.setStatus(
      tx,
      actor.orgId,
      id,
      to,
      to === 'cancelled' ? { cancelledBy: actor.ctx.principalId, reason: body.cancellation_reason?.trim() || null } : {},
    );
    if (to === 'cancelled' || to === 'no_show') await q.releaseClaims(tx, actor.orgId, id);
    await audit(tx, actor, `appointment.${to}`, 'appointment', id, { from: row.status });
    await emit(tx, actor.orgId, eventOf(to), { id, from: row.status, to });
  }

  const details = {
    notes: body.notes === undefined ? row.notes : body.notes?.trim() || null,
    patient_note: body.patient_note === undefined ? row.patient_note : body.patient_note?.trim() || null,
    patient_id: body.patient_id === undefined ? row.patient_id : (body.patient_id?.toLowerCase() ?? null),
  };
  const changed = (Object.keys(details) as (keyof typeof details)[]).filter((k) => details[k] !== row[k]);
  if (changed.length) {
    if ((changed.includes('notes') || changed.includes('patient_id')) && !may.update)
      throw errors.forbidden('Staff notes and the patient record need appointments.update_org (or update_own).');
    if (changed.includes('patient_id')) {
      if (row.patient_id !== null) throw errors.conflict('patient_set', 'This appointment already belongs to a patient record.');
      await patientPerson(tx, actor.orgId, details.patient_id!);
    }
    await q.updateDetails(tx, actor.orgId, id, details);
    await audit(tx, actor, 'appointment.updated', 'appointment', id, { fields: changed });
  }
  return present((await q.findAppointment(tx, actor.orgId, id))!, may.patient && !may.update);
}

function eventOf(status: q.Status): string {
  return status === 'done' ? 'appointment.completed' : `appointment.${status}`;
}

async function reschedule(
  tx: Queryable,
  actor: OrgActor,
  row: q.AppointmentRow,
  body: PatchBody,
  may: { update: boolean; cancel: boolean; patient: boolean },
  windowClosed: boolean,
  own: string | null,
) {
  if (!['scheduled', 'confirmed'].includes(row.status)) throw invalidTransition(row.status, 'rescheduled');
  if (!may.update && !may.patient) throw errors.forbidden('Rescheduling needs appointments.update_org (or update_own).');
  // A specialist's erasure leaves its appointments without one (migration 0073): the move names who takes it.
  const specialistId = body.specialist_id?.toLowerCase() ?? row.specialist_id;
  if (!specialistId) throw errors.queryValidation({ specialist_id: 'required: this appointment has no specialist any more' });
  if (!may.patient) requireVisibleSpecialist(actor, specialistId, own);
  if (!may.update && windowClosed)
    throw errors.conflict(
      'cancellation_window_passed',
      `Appointments of this service are moved at least ${row.cancellation_window_minutes} minutes ahead; call the clinic.`,
    );
  // The old time is freed first, so that a move within it (a few minutes later) is possible.
  await q.releaseClaims(tx, actor.orgId, row.id);
  const target = await resolveSlot(
    tx,
    actor.orgId,
    {
      service_id: row.service_id,
      specialist_id: specialistId,
      location_id: body.location_id === undefined ? row.location_id : body.location_id,
      start: body.start ?? row.starts_at.toISOString(),
    },
    may.update ? 'staff' : 'patient',
  );
  const next = await bookTarget(tx, actor, actor.orgId, target, {
    // The new row is booked by whoever moves it: a patient moving a visit the front desk (or a guest
    // form) booked makes a patient booking, which is also all the patient's insert policy allows.
    source: may.update ? row.source : 'patient',
    patientId: row.patient_id,
    guest: row.guest_email
      ? { name: row.guest_name ?? '', email: row.guest_email, phone: row.guest_phone, consents: row.guest_consents }
      : null,
    notes: row.notes,
    patientNote: row.patient_note,
    // The answers go with the visit to its new time.
    intake: row.intake_form_template_id
      ? {
          templateId: row.intake_form_template_id,
          templateVersion: row.intake_template_version!,
          fields: row.intake_fields as unknown as Intake['fields'],
          answers: row.intake_answers,
        }
      : null,
    rescheduledFrom: row.id,
  });
  await q.setStatus(tx, actor.orgId, row.id, 'rescheduled', { rescheduledTo: next.id });
  await audit(tx, actor, 'appointment.rescheduled', 'appointment', row.id, { to: next.id, starts_at: next.starts_at });
  await emit(tx, actor.orgId, 'appointment.rescheduled', { id: row.id, to: next.id, starts_at: next.starts_at.toISOString() });
  return present(next, may.patient && !may.update);
}

/** DELETE: appointments.delete removes a booking that never took place (never one checked in, in progress or done). */
export async function deleteAppointment(tx: Queryable, actor: OrgActor, id: string): Promise<void> {
  const row = await q.findAppointment(tx, actor.orgId, id, true);
  if (!row) throw notFound();
  if (['checked_in', 'in_progress', 'done'].includes(row.status))
    throw errors.conflict('appointment_took_place', 'An appointment that took place stays in the record; it cannot be deleted.');
  await tx.query('delete from appointments where organization_id = $1 and id = $2', [actor.orgId, id]);
  await audit(tx, actor, 'appointment.deleted', 'appointment', id, { status: row.status, starts_at: row.starts_at });
  await emit(tx, actor.orgId, 'appointment.deleted', { id });
}

/** The sweep: scheduled or confirmed appointments long past their end without a check-in become no_show. */
export async function markNoShows(tx: Queryable, graceMinutes: number): Promise<number> {
  const due = await q.overdueAppointments(tx, graceMinutes);
  for (const a of due) {
    await q.setStatus(tx, a.organization_id, a.id, 'no_show');
    await q.releaseClaims(tx, a.organization_id, a.id);
    await recordChange(
      tx,
      null,
      'appointment.no_show',
      { type: 'appointment', id: a.id, organizationId: a.organization_id },
      { by: 'sweep' },
      { actionContext: 'system' },
    );
    await emit(tx, a.organization_id, 'appointment.no_show', { id: a.id, to: 'no_show' });
  }
  return due.length;
}
