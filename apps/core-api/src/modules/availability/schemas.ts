import { Timestamp, Uuid, nullable } from '@clinic/http-kit';
import { Type } from 'typebox';

const LocalTime = (what: 'start' | 'end') =>
  Type.String({
    pattern: what === 'start' ? '^([01][0-9]|2[0-3]):[0-5][0-9]$' : '^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$',
    description: `Local wall-clock time HH:MM${what === 'end' ? ' (24:00 is the end of the day)' : ''}.`,
    examples: [what === 'start' ? '09:00' : '17:00'],
  });
const LocalDate = (description: string) => Type.String({ format: 'date', description });
const Zone = Type.String({
  minLength: 1,
  maxLength: 64,
  description: "IANA time zone such as Europe/Bucharest. Defaults to the location's zone.",
  examples: ['Europe/Bucharest'],
});

const ruleFields = {
  location_id: Uuid,
  weekday: Type.Integer({ minimum: 1, maximum: 7, description: 'ISO weekday: 1 is Monday, 7 is Sunday.' }),
  start: LocalTime('start'),
  end: LocalTime('end'),
};
const exceptionFields = {
  kind: Type.Union([Type.Literal('time_off'), Type.Literal('extra_hours')]),
  date: LocalDate('The local date.'),
};

export const AvailabilityRule = Type.Object({
  id: Uuid,
  ...ruleFields,
  time_zone: Type.String(),
  effective_from: nullable(Type.String({ format: 'date' })),
  effective_until: nullable(Type.String({ format: 'date' })),
});
export const AvailabilityException = Type.Object({
  id: Uuid,
  ...exceptionFields,
  location_id: nullable(Uuid, { description: 'null: time off at every location.' }),
  start: nullable(Type.String()),
  end: nullable(Type.String()),
  time_zone: Type.String(),
  note: nullable(Type.String()),
});
export const AvailabilityWindow = Type.Object({
  location_id: Uuid,
  start: Timestamp,
  end: Timestamp,
});

export const Availability = Type.Object(
  {
    specialist_id: Uuid,
    rules: Type.Array(AvailabilityRule),
    exceptions: Type.Array(AvailabilityException),
    windows: Type.Optional(
      Type.Array(AvailabilityWindow, {
        description: 'With from and to: the open intervals as instants (rules plus extra hours minus time off), by start.',
      }),
    ),
  },
  { $id: 'Availability' },
);

export const PutAvailabilityBody = Type.Object(
  {
    rules: Type.Array(
      Type.Object(
        {
          ...ruleFields,
          time_zone: Type.Optional(Zone),
          effective_from: Type.Optional(nullable(LocalDate('First day the rule applies (inclusive); null: always.'))),
          effective_until: Type.Optional(nullable(LocalDate('Last day the rule applies (inclusive); null: open-ended.'))),
        },
        { additionalProperties: false },
      ),
      { maxItems: 200 },
    ),
    exceptions: Type.Optional(
      Type.Array(
        Type.Object(
          {
            ...exceptionFields,
            location_id: Type.Optional(nullable(Uuid, { description: 'Required for extra_hours; null time off is everywhere.' })),
            start: Type.Optional(nullable(LocalTime('start'))),
            end: Type.Optional(nullable(LocalTime('end'))),
            time_zone: Type.Optional(Zone),
            note: Type.Optional(nullable(Type.String({ maxLength: 500 }))),
          },
          { additionalProperties: false, description: 'Without start and end, time off covers the whole day.' },
        ),
        { maxItems: 500 },
      ),
    ),
  },
  { additionalProperties: false, description: 'The whole availability: what is left out is removed.' },
);

export const AvailabilityQuery = Type.Object({
  from: Type.Optional(LocalDate('With to: also return the open windows of these local dates (at most 62 days).')),
  to: Type.Optional(LocalDate('Last local date of the windows (inclusive).')),
});
export const AvailabilityParams = Type.Object({ id: Uuid });
