import { DateRangeQuery, ListQueryWith, SortParam, Timestamp, Uuid, nullable } from '@clinic/http-kit';
import { Type } from 'typebox';

export const APPOINTMENT_SORT = { starts_at: 'a.starts_at', created_at: 'a.created_at', status: 'a.status' } as const;

const Status = Type.Union([
  Type.Literal('scheduled'),
  Type.Literal('confirmed'),
  Type.Literal('checked_in'),
  Type.Literal('in_progress'),
  Type.Literal('done'),
  Type.Literal('cancelled'),
  Type.Literal('no_show'),
  Type.Literal('rescheduled'),
]);

export const Appointment = Type.Object(
  {
    id: Uuid,
    organization_id: Uuid,
    service_id: Uuid,
    specialist_id: nullable(Uuid),
    location_id: nullable(Uuid),
    patient_id: nullable(Uuid, { description: 'null for a guest booking not yet tied to a patient record.' }),
    starts_at: Timestamp,
    ends_at: Timestamp,
    buffer_before_minutes: Type.Integer(),
    buffer_after_minutes: Type.Integer(),
    cancellation_window_minutes: Type.Integer(),
    mode: Type.String({ description: 'in_person, video or phone (from the service at booking).' }),
    status: Status,
    source: Type.String({ description: 'staff, patient or guest: who booked it.' }),
    guest_name: nullable(Type.String()),
    guest_email: nullable(Type.String()),
    guest_phone: nullable(Type.String()),
    guest_consents: Type.Array(Type.Object({ purpose_code: Type.String(), purpose_version: Type.Integer() })),
    intake_form_template_id: nullable(Uuid),
    intake_template_version: nullable(Type.Integer()),
    intake_fields: Type.Array(Type.Record(Type.String(), Type.Unknown()), { description: 'The intake questions as answered (snapshot).' }),
    intake_answers: Type.Record(Type.String(), Type.Unknown()),
    notes: Type.Optional(nullable(Type.String({ description: 'Staff only.' }))),
    patient_note: nullable(Type.String()),
    rescheduled_from: nullable(Uuid),
    rescheduled_to: nullable(Uuid),
    cancelled_at: nullable(Timestamp),
    cancelled_by_principal_id: nullable(Uuid),
    cancellation_reason: nullable(Type.String()),
    status_changed_at: Timestamp,
    created_by_principal_id: nullable(Uuid),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'Appointment' },
);

const slot = {
  service_id: Uuid,
  specialist_id: Uuid,
  location_id: Type.Optional(nullable(Uuid)),
  start: Type.String({ format: 'date-time', description: 'A slot start from GET /v1/public/availability.' }),
};

export const CreateAppointmentBody = Type.Object(
  {
    ...slot,
    patient_id: Type.Optional(Uuid),
    notes: Type.Optional(nullable(Type.String({ maxLength: 5000 }))),
    patient_note: Type.Optional(nullable(Type.String({ maxLength: 2000 }))),
    intake: Type.Optional(
      Type.Record(Type.String({ maxLength: 100 }), Type.Unknown(), { description: "Answers to the service's intake form, by field key." }),
    ),
  },
  { additionalProperties: false },
);

export const PatchAppointmentBody = Type.Object(
  {
    status: Type.Optional(Status),
    cancellation_reason: Type.Optional(nullable(Type.String({ maxLength: 500 }))),
    start: Type.Optional(Type.String({ format: 'date-time', description: 'Reschedule to this slot start.' })),
    specialist_id: Type.Optional(Uuid),
    location_id: Type.Optional(nullable(Uuid)),
    notes: Type.Optional(nullable(Type.String({ maxLength: 5000 }))),
    patient_note: Type.Optional(nullable(Type.String({ maxLength: 2000 }))),
    patient_id: Type.Optional(nullable(Uuid)),
  },
  { additionalProperties: false },
);

export const AppointmentListQuery = ListQueryWith({
  sort: SortParam(APPOINTMENT_SORT),
  status: Type.Optional(
    Type.String({ description: 'Comma-separated statuses, or upcoming (scheduled or confirmed, starting later than now).' }),
  ),
  specialist_id: Type.Optional(Uuid),
  patient_id: Type.Optional(Uuid),
  location_id: Type.Optional(Uuid),
  service_id: Type.Optional(Uuid),
  ...DateRangeQuery('starts_at'),
});
export const AppointmentParams = Type.Object({ id: Uuid });
