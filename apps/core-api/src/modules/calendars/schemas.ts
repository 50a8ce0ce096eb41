import { DateRangeQuery, ListQueryWith, SortParam, Timestamp, Uuid, nullable } from '@clinic/http-kit';
import { Type } from 'typebox';
import { AvailabilityException, AvailabilityRule, AvailabilityWindow } from '../availability/schemas.ts';

export const CALENDAR_SORT = { name: 'lower(c.name)', kind: 'c.kind', created_at: 'c.created_at' } as const;

export const Calendar = Type.Object(
  {
    id: Uuid,
    organization_id: Uuid,
    kind: Type.String({ description: 'specialist (one each, made with the specialist), room or device.' }),
    name: Type.String(),
    description: nullable(Type.String()),
    specialist_id: nullable(Uuid),
    location_id: nullable(Uuid, { description: 'Where a room or device is; a specialist works at its locations.' }),
    feed_enabled: Type.Boolean({ description: 'Whether a secret iCalendar feed URL exists.' }),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'Calendar' },
);

export const CreateCalendarBody = Type.Object(
  {
    kind: Type.Union([Type.Literal('room'), Type.Literal('device')]),
    name: Type.String({ minLength: 1, maxLength: 200 }),
    description: Type.Optional(nullable(Type.String({ maxLength: 2000 }))),
    location_id: Uuid,
  },
  { additionalProperties: false },
);
export const UpdateCalendarBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    description: Type.Optional(nullable(Type.String({ maxLength: 2000 }))),
  },
  { additionalProperties: false },
);
export const CalendarListQuery = ListQueryWith({
  sort: SortParam(CALENDAR_SORT),
  kind: Type.Optional(Type.String({ description: 'specialist, room or device.' })),
  location_id: Type.Optional(Uuid),
  specialist_id: Type.Optional(Uuid),
  ...DateRangeQuery('created_at'),
});
export const CalendarParams = Type.Object({ id: Uuid });

export const CalendarAvailability = Type.Object(
  {
    calendar_id: Uuid,
    rules: Type.Array(AvailabilityRule),
    exceptions: Type.Array(AvailabilityException),
    windows: Type.Optional(Type.Array(AvailabilityWindow)),
  },
  { $id: 'CalendarAvailability' },
);

export const CalendarFeed = Type.Object(
  {
    calendar_id: Uuid,
    url: Type.String({ description: 'The secret feed URL, shown this once; subscribe to it from a calendar app.' }),
    rotated: Type.Boolean({ description: 'Whether it replaced an earlier URL (which no longer works).' }),
    created_at: Timestamp,
  },
  { $id: 'CalendarFeed' },
);
export const CalendarFeedParams = Type.Object({ token: Type.String({ description: 'The secret of the feed URL.' }) });
