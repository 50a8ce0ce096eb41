import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Database, Queryable } from '@clinic/db';
import { errors } from '@clinic/http-kit';
import type { OrgActor } from '../../platform/actor.ts';
import { audit } from '../../platform/audit.ts';
import { hasPermission } from '../../platform/identity/context.ts';
import { feedEntries } from '../appointments/extras-queries.ts';
import { appointmentEvent } from '../appointments/icalendar.ts';
import { buildCalendar } from '../../platform/icalendar.ts';
import * as q from './queries.ts';

/*
 * A calendar's secret iCalendar feed: a URL with a token that a calendar app
 * subscribes to. Only the token's SHA-256 is stored (calendars.feed_token_hash); the URL is shown once;
 * a new one replaces it (the old URL stops working), DELETE removes it. The feed shows busy blocks with
 * the service's name and the appointment id, never the patient (docs/decisions.md).
 */

const PREFIX = 'calfeed_';
/** A feed token: the prefix and 32 random bytes in base64url. Anything else is no feed. */
export const FEED_TOKEN = /^calfeed_[A-Za-z0-9_-]{43}$/;
const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');

/** Booked appointments from this many days ago on; cancelled or moved ones stay (as CANCELLED) this long. */
export const FEED_PAST_DAYS = 90;
export const FEED_CANCELLED_DAYS = 30;
const FEED_LIMIT = 5000;
/** How often a subscribed client is asked to fetch again. */
const REFRESH_MINUTES = 15;

const notFound = () => errors.notFound('No calendar with this id in this organization.');

/**
 * Sets the calendar's feed hash (or clears it with null): with locations.manage any calendar, otherwise
 * only the caller's own specialist calendar (app.set_own_calendar_feed). Returns whether one was set before.
 */
async function setFeed(tx: Queryable, actor: OrgActor, id: string, hash: string | null): Promise<boolean> {
  if (hasPermission(actor.ctx, 'locations.manage')) {
    const cal = await q.findCalendar(tx, actor.orgId, id, true);
    if (!cal) throw notFound();
    await q.setFeedToken(tx, actor.orgId, id, hash);
    return cal.feed_enabled;
  }
  const { rows } = await tx.query<{ had: boolean | null }>('select app.set_own_calendar_feed($1, $2) as had', [id, hash]);
  const had = rows[0]?.had ?? null;
  if (had !== null) return had;
  if (!(await q.findCalendar(tx, actor.orgId, id))) throw notFound();
  throw errors.forbidden("A calendar's feed is made by its specialist, or by staff with locations.manage.");
}

/** POST /v1/calendars/{id}/feed: a new secret URL (shown once), replacing any earlier one. */
export async function createFeed(tx: Queryable, actor: OrgActor, id: string, publicUrl: string) {
  const token = `${PREFIX}${randomBytes(32).toString('base64url')}`;
  const rotated = await setFeed(tx, actor, id, sha256(token));
  await audit(tx, actor, 'calendar.feed_created', 'calendar', id, { rotated });
  return {
    calendar_id: id,
    url: `${publicUrl.replace(/\/+$/, '')}/v1/public/calendar-feeds/${token}.ics`,
    rotated,
    created_at: new Date(),
  };
}

/** DELETE /v1/calendars/{id}/feed: the URL stops working. */
export async function deleteFeed(tx: Queryable, actor: OrgActor, id: string): Promise<void> {
  const had = await setFeed(tx, actor, id, null);
  if (had) await audit(tx, actor, 'calendar.feed_removed', 'calendar', id, {});
}

const BYPASS = { role: 'app_bypass', principalId: null, orgId: null, permissions: [] } as const;

/**
 * GET /v1/public/calendar-feeds/{token}.ics: no bearer token, so a narrow read on app_bypass (spec 5.3).
 * The calendar is found by the token's hash (a unique index), and the stored hash is compared again in
 * constant time; a malformed or unknown token, or the calendar of a specialist who left, is 404.
 */
export async function readFeed(db: Database, token: string, host: string): Promise<string> {
  const missing = () => errors.notFound('No calendar feed at this address (it may have been replaced or removed).');
  if (!FEED_TOKEN.test(token)) throw missing();
  const hash = sha256(token);
  return db.withScope(BYPASS, async (tx) => {
    const { rows } = await tx.query<{
      id: string;
      organization_id: string;
      name: string;
      specialist_id: string | null;
      feed_token_hash: string;
    }>(
      `select c.id, c.organization_id, c.name, c.specialist_id, c.feed_token_hash from calendars c
       where c.feed_token_hash = $1
         and (c.specialist_id is null
              or exists (select 1 from specialists s where s.organization_id = c.organization_id and s.id = c.specialist_id
                           and s.deleted_at is null))`,
      [hash],
    );
    const cal = rows[0];
    if (!cal || !timingSafeEqual(Buffer.from(cal.feed_token_hash, 'hex'), Buffer.from(hash, 'hex'))) throw missing();
    const entries = await feedEntries(tx, cal.organization_id, cal, {
      pastDays: FEED_PAST_DAYS,
      cancelledDays: FEED_CANCELLED_DAYS,
      limit: FEED_LIMIT,
    });
    return buildCalendar({
      product: 'Scheduling',
      name: cal.name,
      refreshMinutes: REFRESH_MINUTES,
      // A specialist's own feed needs no name on each entry; a room's or device's says whose visit it is.
      events: entries.map((e) => appointmentEvent(e, host, { withSpecialist: cal.specialist_id === null })),
    });
  });
}
