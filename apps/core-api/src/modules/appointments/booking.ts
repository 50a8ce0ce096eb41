import type { Queryable } from '@clinic/db';
import { errors } from '@clinic/http-kit';
import { findBookableService, type BookableService } from '../scheduling/queries.ts';
import { freeSlots } from '../scheduling/slots.ts';
import * as q from './queries.ts';

/** The grid of a service's slots (docs/scheduling.md). */
export const DEFAULT_STEP_MINUTES = 15;

/** Who is booking, which decides the rules that apply. */
export type Booker = 'public' | 'patient' | 'staff';

export interface Target {
  service: BookableService;
  specialistId: string;
  locationId: string | null;
  start: Date;
  end: Date;
  calendarId: string;
}

const FAR_PAST = new Date(0);
const FAR_FUTURE = new Date('9999-01-01T00:00:00Z');

/**
 * The booking rules of a service for a booker: the public page and patients book public services of
 * specialists bookable online, within minimum notice and the days ahead; staff book any service they
 * can read, at any free time of the specialist's availability.
 */
export function bookingRules(service: BookableService, booker: Booker, now = new Date()) {
  if (booker === 'staff') return { earliest: FAR_PAST, latest: FAR_FUTURE };
  return {
    earliest: new Date(now.getTime() + service.min_notice_minutes * 60_000),
    latest: new Date(now.getTime() + service.max_days_ahead * 86_400_000),
  };
}

/**
 * Resolves what a booking (or a hold) names and checks that it is a free slot, exactly: the service, a
 * specialist who delivers it (bookable online for the public and patients), a location where it is
 * delivered, a start on the grid inside the specialist's availability, free of appointments and other
 * holds. Every problem with the request is 422 with fields; a slot taken meanwhile is 409 slot_unavailable.
 */
export async function resolveSlot(
  tx: Queryable,
  orgId: string,
  body: { service_id: string; specialist_id: string; location_id?: string | null; start: string },
  booker: Booker,
  ignoreHoldId: string | null = null,
): Promise<Target> {
  const service = await findBookableService(tx, orgId, body.service_id.toLowerCase());
  if (!service || (booker !== 'staff' && !service.is_public)) throw errors.queryValidation({ service_id: 'no such bookable service here' });
  const specialistId = body.specialist_id.toLowerCase();
  const delivering = service.specialists.find((s) => s.id === specialistId);
  if (!delivering || (booker !== 'staff' && !delivering.bookable_online))
    throw errors.queryValidation({ specialist_id: 'not a specialist who delivers this service (bookable online)' });
  const locationId = body.location_id ? body.location_id.toLowerCase() : null;
  if (locationId && service.location_ids.length && !service.location_ids.includes(locationId))
    throw errors.queryValidation({ location_id: 'the service is not delivered at this location' });
  const start = new Date(body.start);
  if (Number.isNaN(start.getTime())) throw errors.queryValidation({ start: 'an RFC 3339 instant' });
  const calendarId = await q.specialistCalendar(tx, orgId, specialistId);
  if (!calendarId) throw errors.queryValidation({ specialist_id: 'this specialist has no calendar' });
  const rules = bookingRules(service, booker);
  // Out of the booking rules there is no slot; checked before the slot query, which an instant beyond what
  // dates can hold (year 0, year 10000) would fail.
  if (start < rules.earliest)
    throw errors.queryValidation({
      start: booker === 'staff' ? 'too far in the past to book' : `at least ${service.min_notice_minutes} minutes from now`,
    });
  if (start >= rules.latest)
    throw errors.queryValidation({ start: booker === 'staff' ? 'too far ahead to book' : `at most ${service.max_days_ahead} days ahead` });
  const slots = await freeSlots(tx, {
    orgId,
    serviceId: service.id,
    specialistIds: [specialistId],
    locationIds: locationId ? [locationId] : service.location_ids.length ? service.location_ids : null,
    from: start,
    to: new Date(start.getTime() + 60_000),
    durationMinutes: service.duration_minutes,
    bufferBeforeMinutes: service.buffer_before_minutes,
    bufferAfterMinutes: service.buffer_after_minutes,
    stepMinutes: service.slot_interval_minutes ?? DEFAULT_STEP_MINUTES,
    earliest: rules.earliest,
    latest: rules.latest,
    ignoreHoldId,
  });
  const slot = slots.find((s) => s.start.getTime() === start.getTime());
  if (!slot) throw q.slotUnavailable();
  return { service, specialistId, locationId: slot.location_id, start: slot.start, end: slot.end, calendarId };
}

/** The time an appointment of this service occupies on the calendars: its slot with the buffers. */
export function occupied(t: { start: Date; end: Date }, service: Pick<BookableService, 'buffer_before_minutes' | 'buffer_after_minutes'>) {
  return {
    start: new Date(t.start.getTime() - service.buffer_before_minutes * 60_000),
    end: new Date(t.end.getTime() + service.buffer_after_minutes * 60_000),
  };
}
