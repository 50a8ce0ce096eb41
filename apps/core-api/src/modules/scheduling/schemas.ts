import { Timestamp, Uuid, nullable } from '@clinic/http-kit';
import { Type } from 'typebox';

const organization = Type.Optional(
  Type.String({
    maxLength: 63,
    description: "The organization's id or slug; left out, the request host must be one of its verified custom domains.",
  }),
);

export const AvailabilityQuery = Type.Object({
  organization,
  service_id: Uuid,
  specialist_id: Type.Optional(Uuid),
  location_id: Type.Optional(Uuid),
  from: Type.String({ maxLength: 10, description: 'First local date (YYYY-MM-DD) in time_zone.' }),
  to: Type.String({ maxLength: 10, description: 'Last local date, inclusive; at most 62 days after from.' }),
  time_zone: Type.Optional(
    Type.String({ maxLength: 64, description: "The viewer's IANA zone (default UTC): the dates and start_local are in it." }),
  ),
});

export const Slot = Type.Object({
  start: Timestamp,
  end: Timestamp,
  start_local: Type.String({ description: "The start in the viewer's zone, with its offset." }),
  end_local: Type.String(),
  specialist_id: Uuid,
  location_id: Uuid,
});

export const Availability = Type.Object(
  {
    service_id: Uuid,
    time_zone: Type.String(),
    duration_minutes: Type.Integer(),
    slots: Type.Array(Slot),
  },
  { $id: 'PublicAvailability' },
);

export const HoldBody = Type.Object(
  {
    organization,
    service_id: Uuid,
    specialist_id: Uuid,
    location_id: Type.Optional(nullable(Uuid)),
    start: Type.String({ format: 'date-time', description: 'A slot start from GET /v1/public/availability.' }),
  },
  { additionalProperties: false },
);

export const Hold = Type.Object(
  {
    id: Uuid,
    organization_id: Uuid,
    service_id: Uuid,
    specialist_id: Uuid,
    location_id: nullable(Uuid),
    start: Timestamp,
    end: Timestamp,
    status: Type.String({ description: 'live, released, converted or expired.' }),
    expires_at: Timestamp,
    appointment_id: nullable(Uuid),
  },
  { $id: 'Hold' },
);
export const NewHold = Type.Object({
  ...Hold.properties,
  secret: Type.String({ description: 'Shown once: send it as X-Hold-Secret to release or stream the hold, and to book it.' }),
});

export const BookingBody = Type.Object(
  {
    organization,
    hold_id: Uuid,
    secret: Type.String({ minLength: 1, maxLength: 200 }),
    name: Type.String({ minLength: 1, maxLength: 200 }),
    email: Type.String({ minLength: 3, maxLength: 254 }),
    phone: Type.Optional(nullable(Type.String({ maxLength: 40 }))),
    note: Type.Optional(nullable(Type.String({ maxLength: 2000, description: 'For the clinic.' }))),
    intake: Type.Optional(
      Type.Record(Type.String({ maxLength: 100 }), Type.Unknown(), { description: "Answers to the service's intake form, by field key." }),
    ),
    consents: Type.Optional(
      Type.Array(
        Type.Object({ purpose_code: Type.String({ maxLength: 64 }), purpose_version: Type.Integer({ minimum: 1, maximum: 2147483647 }) }),
        {
          maxItems: 20,
          description: "The latest version of each of the organization's required purposes (and telemedicine for a video visit).",
        },
      ),
    ),
  },
  { additionalProperties: false },
);
export const HoldParams = Type.Object({ id: Uuid });
export const HoldStreamQuery = Type.Object({
  secret: Type.Optional(
    Type.String({
      maxLength: 200,
      description: 'The hold secret, for EventSource clients that cannot send X-Hold-Secret (the header wins when both are sent).',
    }),
  ),
});

export const BookingFormQuery = Type.Object({ organization, service_id: Uuid });

export const BookingForm = Type.Object({
  service_id: Uuid,
  mode: Type.String({ description: 'in_person, video or phone.' }),
  consents: Type.Array(
    Type.Object({
      purpose_code: Type.String(),
      purpose_version: Type.Integer({ description: 'Send it back in the booking: the latest version is the one accepted.' }),
      name: Type.String(),
      texts: Type.Record(Type.String(), Type.String(), { description: 'The text by language code (en always).' }),
    }),
    { description: "The organization's required purposes, and telemedicine for a video service." },
  ),
  intake: Type.Array(
    Type.Object({
      key: Type.String(),
      label: Type.String(),
      field_type: Type.String(),
      options: Type.Array(Type.String()),
      required: Type.Boolean(),
    }),
    { description: "The service's intake questions (empty without an intake form); answer them in the booking's intake by key." },
  ),
});
