import { pgErrorCode, type Queryable } from '@clinic/db';
import { AppError, SqlWhere, type DateRange, type Pagination, type Sort } from '@clinic/http-kit';

export type Status = 'scheduled' | 'confirmed' | 'checked_in' | 'in_progress' | 'done' | 'cancelled' | 'no_show' | 'rescheduled';

export interface AppointmentRow {
  id: string;
  organization_id: string;
  service_id: string;
  specialist_id: string | null;
  location_id: string | null;
  patient_id: string | null;
  starts_at: Date;
  ends_at: Date;
  buffer_before_minutes: number;
  buffer_after_minutes: number;
  cancellation_window_minutes: number;
  mode: 'in_person' | 'video' | 'phone';
  status: Status;
  source: 'staff' | 'patient' | 'guest';
  guest_name: string | null;
  guest_email: string | null;
  guest_phone: string | null;
  guest_consents: { purpose_code: string; purpose_version: number }[];
  intake_form_template_id: string | null;
  intake_template_version: number | null;
  intake_fields: Record<string, unknown>[];
  intake_answers: Record<string, unknown>;
  notes: string | null;
  patient_note: string | null;
  rescheduled_from: string | null;
  rescheduled_to: string | null;
  cancelled_at: Date | null;
  cancelled_by_principal_id: string | null;
  cancellation_reason: string | null;
  status_changed_at: Date;
  created_by_principal_id: string | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = `a.id, a.organization_id, a.service_id, a.specialist_id, a.location_id, a.patient_id, a.starts_at, a.ends_at,
  a.buffer_before_minutes, a.buffer_after_minutes, a.cancellation_window_minutes, a.mode, a.status, a.source, a.guest_name,
  a.guest_email, a.guest_phone, a.guest_consents, a.intake_form_template_id, a.intake_template_version, a.intake_fields,
  a.intake_answers, a.notes, a.patient_note, a.rescheduled_from, a.rescheduled_to, a.cancelled_at,
  a.cancelled_by_principal_id, a.cancellation_reason, a.status_changed_at, a.created_by_principal_id, a.created_at, a.updated_at`;

/** Statuses whose time stays taken on the calendars. */
export const OCCUPYING: Status[] = ['scheduled', 'confirmed', 'checked_in', 'in_progress', 'done'];

export const slotUnavailable = () =>
  new AppError(409, 'slot_unavailable', 'This time is no longer free (booked or held by someone else); pick another slot.');

// Every statement names the organization: superadmins run on app_bypass, where no policy narrows rows.

export interface NewAppointment {
  orgId: string;
  serviceId: string;
  specialistId: string;
  locationId: string | null;
  patientId: string | null;
  startsAt: Date;
  endsAt: Date;
  bufferBefore: number;
  bufferAfter: number;
  cancellationWindow: number;
  mode: string;
  source: 'staff' | 'patient' | 'guest';
  guest: { name: string; email: string; phone: string | null; consents: unknown[] } | null;
  intake: { templateId: string; templateVersion: number; fields: object[]; answers: Record<string, unknown> } | null;
  notes: string | null;
  patientNote: string | null;
  rescheduledFrom: string | null;
  by: string | null;
}

export async function insertAppointment(tx: Queryable, a: NewAppointment): Promise<string> {
  const { rows } = await tx.query<{ id: string }>(
    `insert into appointments (organization_id, service_id, specialist_id, location_id, patient_id, starts_at, ends_at,
       buffer_before_minutes, buffer_after_minutes, cancellation_window_minutes, mode, source, guest_name, guest_email, guest_phone,
       guest_consents, notes, patient_note, rescheduled_from, created_by_principal_id, intake_form_template_id, intake_template_version,
       intake_fields, intake_answers)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16::jsonb, $17, $18, $19, $20, $21, $22, $23::jsonb,
       $24::jsonb) returning id`,
    [
      a.orgId,
      a.serviceId,
      a.specialistId,
      a.locationId,
      a.patientId,
      a.startsAt,
      a.endsAt,
      a.bufferBefore,
      a.bufferAfter,
      a.cancellationWindow,
      a.mode,
      a.source,
      a.guest?.name ?? null,
      a.guest?.email ?? null,
      a.guest?.phone ?? null,
      JSON.stringify(a.guest?.consents ?? []),
      a.notes,
      a.patientNote,
      a.rescheduledFrom,
      a.by,
      a.intake?.templateId ?? null,
      a.intake?.templateVersion ?? null,
      JSON.stringify(a.intake?.fields ?? []),
      JSON.stringify(a.intake?.answers ?? {}),
    ],
  );
  return rows[0]!.id;
}

/** The calendar of a specialist. */
export async function specialistCalendar(tx: Queryable, orgId: string, specialistId: string): Promise<string | null> {
  const { rows } = await tx.query<{ id: string }>('select id from calendars where organization_id = $1 and specialist_id = $2', [
    orgId,
    specialistId,
  ]);
  return rows[0]?.id ?? null;
}

/**
 * Frees what expired holds still claim on the calendar around `during` (the sweep may not have run yet),
 * then claims `during`. Overlap with an active claim is the exclusion constraint's 23P01: 409.
 */
export async function claim(
  tx: Queryable,
  c: { orgId: string; calendarId: string; start: Date; end: Date; appointmentId?: string; holdId?: string; expiresAt?: Date },
): Promise<void> {
  await tx.query(
    `update calendar_claims set active = false
     where organization_id = $1 and calendar_id = $2 and active and expires_at is not null and expires_at <= now()
       and during && tstzrange($3, $4)`,
    [c.orgId, c.calendarId, c.start, c.end],
  );
  try {
    await tx.query(
      `insert into calendar_claims (organization_id, calendar_id, during, appointment_id, hold_id, expires_at)
       values ($1, $2, tstzrange($3, $4), $5, $6, $7)`,
      [c.orgId, c.calendarId, c.start, c.end, c.appointmentId ?? null, c.holdId ?? null, c.expiresAt ?? null],
    );
  } catch (err) {
    if (pgErrorCode(err) === '23P01') throw slotUnavailable();
    throw err;
  }
}

/** A live hold's claim becomes the appointment's, the same time with no gap between them. */
export async function claimFromHold(tx: Queryable, orgId: string, holdId: string, appointmentId: string): Promise<void> {
  await tx.query(
    `update calendar_claims set appointment_id = $3, hold_id = null, expires_at = null
     where organization_id = $1 and hold_id = $2 and active`,
    [orgId, holdId, appointmentId],
  );
}

/** Frees the calendars of an appointment (cancelled, moved, no show). */
export async function releaseClaims(tx: Queryable, orgId: string, appointmentId: string): Promise<void> {
  await tx.query('update calendar_claims set active = false where organization_id = $1 and appointment_id = $2 and active', [
    orgId,
    appointmentId,
  ]);
}

export async function findAppointment(tx: Queryable, orgId: string, id: string, forUpdate = false): Promise<AppointmentRow | null> {
  const { rows } = await tx.query<AppointmentRow>(
    `select ${COLUMNS} from appointments a where a.organization_id = $1 and a.id = $2${forUpdate ? ' for update' : ''}`,
    [orgId, id],
  );
  return rows[0] ?? null;
}

export interface AppointmentFilter {
  status?: Status[] | undefined;
  upcoming?: boolean;
  specialistId?: string | undefined;
  patientId?: string | undefined;
  locationId?: string | undefined;
  serviceId?: string | undefined;
  starts: DateRange;
}

export async function listAppointments(tx: Queryable, orgId: string, f: AppointmentFilter, sort: Sort, page: Pagination) {
  const where = new SqlWhere().add('a.organization_id = ?', orgId).dateRange('a.starts_at', f.starts);
  if (f.status?.length) where.add('a.status = any(?::text[])', f.status);
  if (f.upcoming) where.add("a.starts_at > now() and a.status in ('scheduled', 'confirmed')");
  if (f.specialistId) where.add('a.specialist_id = ?', f.specialistId);
  if (f.patientId) where.add('a.patient_id = ?', f.patientId);
  if (f.locationId) where.add('a.location_id = ?', f.locationId);
  if (f.serviceId) where.add('a.service_id = ?', f.serviceId);
  const count = await tx.query<{ total: number }>(`select count(*)::int as total from appointments a where ${where.text}`, where.params);
  const { rows } = await tx.query<AppointmentRow>(
    `select ${COLUMNS} from appointments a where ${where.text} order by ${sort.sql} limit ${where.param(page.limit)} offset ${where.param(page.offset)}`,
    where.params,
  );
  return { rows, total: count.rows[0]!.total };
}

export async function setStatus(
  tx: Queryable,
  orgId: string,
  id: string,
  status: Status,
  extra: { cancelledBy?: string; reason?: string | null; rescheduledTo?: string } = {},
): Promise<void> {
  await tx.query(
    `update appointments set status = $3, status_changed_at = now(),
       cancelled_at = case when $3 = 'cancelled' then now() else cancelled_at end,
       cancelled_by_principal_id = coalesce($4, cancelled_by_principal_id),
       cancellation_reason = coalesce($5, cancellation_reason),
       rescheduled_to = coalesce($6, rescheduled_to)
     where organization_id = $1 and id = $2`,
    [orgId, id, status, extra.cancelledBy ?? null, extra.reason ?? null, extra.rescheduledTo ?? null],
  );
}

export async function updateDetails(
  tx: Queryable,
  orgId: string,
  id: string,
  d: { notes: string | null; patient_note: string | null; patient_id: string | null },
): Promise<void> {
  await tx.query('update appointments set notes = $3, patient_note = $4, patient_id = $5 where organization_id = $1 and id = $2', [
    orgId,
    id,
    d.notes,
    d.patient_note,
    d.patient_id,
  ]);
}

/** Whether the patient (or the guest email) has an earlier appointment at the organization than this one. */
export async function bookedBefore(
  tx: Queryable,
  orgId: string,
  appointmentId: string,
  who: { patientId: string | null; email: string | null },
) {
  const { rows } = await tx.query(
    `select 1 from appointments where organization_id = $1 and id <> $2
       and (($3::uuid is not null and patient_id = $3) or ($4::text is not null and lower(guest_email) = lower($4))) limit 1`,
    [orgId, appointmentId, who.patientId, who.email],
  );
  return rows.length > 0;
}

/** Scheduled or confirmed appointments that ended `graceMinutes` ago without a check-in: the no-show sweep. */
export async function overdueAppointments(tx: Queryable, graceMinutes: number): Promise<{ organization_id: string; id: string }[]> {
  const { rows } = await tx.query<{ organization_id: string; id: string }>(
    `select organization_id, id from appointments
     where status in ('scheduled', 'confirmed') and ends_at < now() - make_interval(mins => $1) order by ends_at limit 500`,
    [graceMinutes],
  );
  return rows;
}
