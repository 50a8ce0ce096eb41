import type { Queryable } from '@clinic/db';
import { errors } from '@clinic/http-kit';
import type { OrgActor } from '../../platform/actor.ts';
import { audit } from '../../platform/audit.ts';
import { emit } from '../events/emit.ts';
import { canonicalTimeZone } from '../locations/validation.ts';
import { editableSpecialist, readableSpecialist } from '../specialists/service.ts';
import * as q from './queries.ts';

/** The longest span of GET ...?from&to (the booking page's range, spec 4.5 Scheduling). */
export const MAX_WINDOW_DAYS = 62;

export interface RuleBody {
  location_id: string;
  weekday: number;
  start: string;
  end: string;
  time_zone?: string;
  effective_from?: string | null;
  effective_until?: string | null;
}
export interface ExceptionBody {
  kind: 'time_off' | 'extra_hours';
  date: string;
  location_id?: string | null;
  start?: string | null;
  end?: string | null;
  time_zone?: string;
  note?: string | null;
}

const minutes = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));
/** Do two inclusive date ranges (null: unbounded) share a day? ISO dates compare as strings. */
const datesMeet = (a: RuleInput, b: RuleInput) =>
  (a.effective_until === null || b.effective_from === null || b.effective_from <= a.effective_until) &&
  (b.effective_until === null || a.effective_from === null || a.effective_from <= b.effective_until);
type RuleInput = q.RuleInput;

/**
 * Checks the whole availability against itself and the specialist's locations. Every problem is
 * reported at once, 422 validation_failed with `fields` keyed by path (`rules[2].end`): the body is
 * well-formed, what it says cannot hold (docs/decisions.md, "Availability").
 */
export function checkAvailability(
  body: { rules: RuleBody[]; exceptions?: ExceptionBody[] },
  locations: Map<string, string>,
  notLinked = 'not a location this specialist is linked to (location_ids)',
): { rules: q.RuleInput[]; exceptions: q.ExceptionInput[] } {
  const problems: Record<string, string> = {};
  const zoneOf = (path: string, given: string | undefined, locationId: string | null): string => {
    if (given !== undefined) {
      const zone = canonicalTimeZone(given.trim());
      if (!zone) problems[`${path}.time_zone`] = 'not an IANA time zone such as Europe/Bucharest';
      return zone ?? given;
    }
    if (locationId && locations.has(locationId)) return locations.get(locationId)!;
    if (!locationId) problems[`${path}.time_zone`] = 'required when no location is named';
    return 'UTC';
  };
  const linked = (path: string, id: string) => {
    if (!locations.has(id)) problems[`${path}.location_id`] = notLinked;
  };

  const rules = body.rules.map((r, i): q.RuleInput => {
    const path = `rules[${i}]`;
    const locationId = r.location_id.toLowerCase();
    linked(path, locationId);
    if (minutes(r.end) <= minutes(r.start)) problems[`${path}.end`] = 'must be after start (split a rule that crosses midnight in two)';
    const from = r.effective_from ?? null;
    const until = r.effective_until ?? null;
    if (from && until && until < from) problems[`${path}.effective_until`] = 'must not be before effective_from';
    return {
      location_id: locationId,
      weekday: r.weekday,
      start: r.start,
      end: r.end,
      time_zone: zoneOf(path, r.time_zone, locationId),
      effective_from: from,
      effective_until: until,
    };
  });
  // A specialist is in one place at a time: two rules of one weekday whose hours and dates meet
  // overlap, whatever their locations.
  rules.forEach((a, i) => {
    for (let j = 0; j < i; j++) {
      const b = rules[j]!;
      if (a.weekday === b.weekday && minutes(a.start) < minutes(b.end) && minutes(b.start) < minutes(a.end) && datesMeet(a, b)) {
        problems[`rules[${i}]`] ??= `overlaps rules[${j}] (same weekday, hours and dates meet)`;
      }
    }
  });

  const exceptions = (body.exceptions ?? []).map((e, i): q.ExceptionInput => {
    const path = `exceptions[${i}]`;
    const locationId = e.location_id ? e.location_id.toLowerCase() : null;
    if (locationId) linked(path, locationId);
    const start = e.start ?? null;
    const end = e.end ?? null;
    if ((start === null) !== (end === null)) problems[`${path}.end`] = 'give both start and end, or neither (the whole day)';
    else if (start !== null && end !== null && minutes(end) <= minutes(start)) problems[`${path}.end`] = 'must be after start';
    if (e.kind === 'extra_hours') {
      if (!locationId) problems[`${path}.location_id`] = 'extra hours happen at a location';
      if (start === null) problems[`${path}.start`] ??= 'extra hours need start and end';
    }
    return {
      kind: e.kind,
      date: e.date,
      location_id: locationId,
      start,
      end,
      time_zone: zoneOf(path, e.time_zone, locationId),
      note: e.note?.trim() || null,
    };
  });

  if (Object.keys(problems).length) throw errors.queryValidation(problems, 'The availability is not consistent; see fields.');
  return { rules, exceptions };
}

/**
 * The local dates of `?from&to` (both or neither, in order, at most MAX_WINDOW_DAYS apart), or null when
 * neither is given; 422 naming the parameter otherwise.
 */
export function windowRange(range: { from?: string; to?: string }): { from: string; to: string } | null {
  if (range.from === undefined && range.to === undefined) return null;
  const { from, to } = range;
  if (from === undefined || to === undefined)
    throw errors.queryValidation({ [from === undefined ? 'from' : 'to']: 'give from and to together' });
  const days = (Date.parse(to) - Date.parse(from)) / 86_400_000;
  if (days < 0) throw errors.queryValidation({ to: 'must not be before from' });
  if (days >= MAX_WINDOW_DAYS) throw errors.queryValidation({ to: `at most ${MAX_WINDOW_DAYS} days from from` });
  return { from, to };
}

/** GET: the rules and exceptions; with from and to, also the open windows of those dates. */
export async function getAvailability(tx: Queryable, orgId: string, specialistId: string, range: { from?: string; to?: string }) {
  const specialist = await readableSpecialist(tx, orgId, specialistId);
  const dates = windowRange(range);
  const windows = dates ? await q.openWindows(tx, orgId, q.specialistOwner(specialist.id), dates.from, dates.to) : undefined;
  return {
    specialist_id: specialist.id,
    rules: await q.readRules(tx, orgId, q.specialistOwner(specialist.id)),
    exceptions: await q.readExceptions(tx, orgId, q.specialistOwner(specialist.id)),
    ...(windows ? { windows } : {}),
  };
}

/** PUT: replaces the whole availability in one transaction (the specialist row is locked). */
export async function putAvailability(
  tx: Queryable,
  actor: OrgActor,
  specialistId: string,
  body: { rules: RuleBody[]; exceptions?: ExceptionBody[] },
) {
  const specialist = await editableSpecialist(tx, actor, specialistId);
  const { rules, exceptions } = checkAvailability(body, await q.linkedLocations(tx, actor.orgId, specialist.id));
  await q.replaceAvailability(tx, actor.orgId, q.specialistOwner(specialist.id), rules, exceptions);
  const counts = { rules: rules.length, exceptions: exceptions.length };
  await audit(tx, actor, 'specialist.availability_updated', 'specialist', specialist.id, counts);
  await emit(tx, actor.orgId, 'specialist.availability_updated', { id: specialist.id, ...counts });
  return getAvailability(tx, actor.orgId, specialist.id, {});
}
