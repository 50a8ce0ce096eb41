import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { createServiceLogger } from '@clinic/http-kit';
import type { FastifyInstance } from 'fastify';
import ICAL from 'ical.js';
import { buildApp } from '../src/app.ts';
import { escapeText, foldLine } from '../src/platform/icalendar.ts';
import { createRuntime, type Runtime } from '../src/platform/runtime.ts';
import { assertError, dataOf, MISSING_UUID, startTestApp, type TestApp } from './helpers.ts';
import { type Clinic, setUpClinic } from './support/appointment-clinic.ts';

/*
 * iCalendar: the .ics of an appointment for whoever reads it, and a calendar's secret
 * feed URL (made by its specialist or with locations.manage, stored as a SHA-256, replaced on rotation,
 * removed by DELETE) served publicly, rate limited per IP, with its token never in a log line. Output is
 * checked line by line (CRLF, 75 octets) and parsed with ical.js; it never names the patient.
 */

const SERVICE = 'Physio; back, neck\\shoulders: ședință de recuperare completă pentru dureri cronice 🦴 (60+ min)';
const FEED_URL = /^http:\/\/[^/]+\/v1\/public\/calendar-feeds\/(calfeed_[A-Za-z0-9_-]{43})\.ics$/;

/** Every line ends with CRLF, none exceeds 75 octets; the text parses as a VCALENDAR. */
function parse(text: string) {
  assert.ok(text.endsWith('\r\n'));
  const lines = text.slice(0, -2).split('\r\n');
  for (const line of lines) {
    assert.ok(!line.includes('\n') && !line.includes('\r'), `a bare line break in ${JSON.stringify(line)}`);
    assert.ok(Buffer.byteLength(line, 'utf8') <= 75, `longer than 75 octets: ${JSON.stringify(line)}`);
  }
  const cal = new ICAL.Component(ICAL.parse(text));
  assert.equal(cal.name, 'vcalendar');
  assert.equal(cal.getFirstPropertyValue('version'), '2.0');
  return {
    cal,
    events: cal.getAllSubcomponents('vevent').map((e) => ({
      uid: String(e.getFirstPropertyValue('uid')),
      summary: String(e.getFirstPropertyValue('summary')),
      description: String(e.getFirstPropertyValue('description')),
      status: String(e.getFirstPropertyValue('status')),
      location: e.getFirstPropertyValue('location') as string | null,
      start: (e.getFirstPropertyValue('dtstart') as ICAL.Time).toJSDate().toISOString(),
      end: (e.getFirstPropertyValue('dtend') as ICAL.Time).toJSDate().toISOString(),
    })),
  };
}

describe('iCalendar', () => {
  let t: TestApp;
  let c: Clinic;
  let clinicName = '';
  let other: Clinic;
  let logged: { rt: Runtime; app: FastifyInstance };
  const lines: string[] = [];

  const feedPath = (url: string) => new URL(url).pathname;
  const fetchFeed = (url: string, app: FastifyInstance = t.app, ip = '203.0.113.10') =>
    app.inject({ method: 'GET', url: feedPath(url), remoteAddress: ip });
  const makeFeed = (calendarId: string, token: string, org = c.org.id) =>
    t.call('POST', `/v1/calendars/${calendarId}/feed`, { token, org });
  const ics = (id: string, token: string, org = c.org.id) => t.call('GET', `/v1/appointments/${id}.ics`, { token, org });

  before(async () => {
    t = await startTestApp({ env: { RATELIMIT_PUBLIC_LIMIT: '100000' } });
    c = await setUpClinic(t, 'ical', { serviceName: SERVICE });
    clinicName = (await t.db.query<{ name: string }>('select name from organizations where id = $1', [c.org.id])).rows[0]!.name;
    other = await setUpClinic(t, 'ical-other');
    // The patient has a name, a phone and notes: none of it may reach a calendar.
    dataOf(
      await c.call('PUT', `/v1/patients/${c.patient.id}`, c.admin, {
        first_name: 'Zenobia',
        last_name: 'Quillfeather',
        phone: '+40 711 222 333',
        notes: 'staff-only remark',
      }),
    );
    // A second instance on the same data whose logger writes here, with a small per-IP budget.
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(...String(chunk).split('\n').filter(Boolean));
        done();
      },
    });
    const config = {
      ...t.config,
      redisKeyPrefix: `${t.config.redisKeyPrefix}logged:`,
      rateLimits: { ...t.config.rateLimits, publicBooking: { limit: 4, windowSeconds: 600 } },
    };
    const rt = await createRuntime(config, {
      db: t.db,
      devIssuer: t.issuer,
      skipMigrations: true,
      logger: createServiceLogger({ level: 'info' }, sink),
    });
    logged = { rt, app: await buildApp(rt) };
    await logged.app.ready();
  });
  after(async () => {
    await logged?.app.close();
    await logged?.rt.close();
    await t?.close();
  });

  it('text is escaped and folded at 75 octets without splitting a character', () => {
    assert.equal(escapeText('a\\b;c,d\r\ne\nf\u0001g\th'), 'a\\\\b\\;c\\,d\\ne\\nfg\th');
    const long = `SUMMARY:${'ș'.repeat(100)}`;
    const folded = foldLine(long).split('\r\n');
    assert.ok(folded.length > 2);
    assert.ok(folded.every((l) => Buffer.byteLength(l) <= 75));
    assert.ok(folded.slice(1).every((l) => l.startsWith(' ')));
    assert.equal(folded.map((l, i) => (i ? l.slice(1) : l)).join(''), long);
    assert.equal(foldLine('short'), 'short');
  });

  it("GET /v1/appointments/{id}.ics: one event with the service, specialist and place, UTC times, never the patient's data", async () => {
    const a = await c.book();
    dataOf(await c.call('PATCH', `/v1/appointments/${a.id}`, c.patient.token, { patient_note: 'private worry' }));
    const res = await ics(a.id, c.patient.token);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.headers['content-type'], 'text/calendar; charset=utf-8');
    assert.match(String(res.headers['content-disposition']), new RegExp(`attachment; filename="appointment-${a.id}.ics"`));
    const { cal, events } = parse(res.body);
    assert.equal(cal.getFirstPropertyValue('method'), 'PUBLISH');
    assert.equal(events.length, 1);
    const e = events[0]!;
    assert.match(e.uid, new RegExp(`^${a.id}@`));
    // The title names the clinic only unless the clinic chose more; every entry is private.
    assert.deepEqual([e.summary, e.location, e.status], [clinicName, 'Central', 'CONFIRMED']);
    assert.ok(res.body.includes('CLASS:PRIVATE'));
    assert.ok(!res.body.includes('Dr Spec 1') && !res.body.includes('ședință'), 'neither the service nor the specialist by default');
    assert.equal(dataOf(await c.call('GET', `/v1/organizations/${c.org.id}/settings`, c.admin)).calendar_title, 'clinic');
    const titled = async (choice: string) => {
      dataOf(await c.call('PATCH', `/v1/organizations/${c.org.id}`, c.admin, { calendar_title: choice }));
      return parse((await ics(a.id, c.patient.token)).body).events[0]!.summary;
    };
    assert.equal(await titled('clinic_and_service'), `${clinicName}: ${SERVICE}`);
    assert.equal(await titled('full'), `${clinicName}: ${SERVICE} with Dr Spec 1`);
    assert.equal(await titled('clinic'), clinicName);
    assertError(await c.call('PATCH', `/v1/organizations/${c.org.id}`, c.admin, { calendar_title: 'everything' }), 400, 'validation_error');
    assert.deepEqual([e.start, e.end], [new Date(a.starts_at).toISOString(), new Date(a.ends_at).toISOString()]);
    assert.ok(e.description.includes(a.id));
    for (const secret of ['Zenobia', 'Quillfeather', '711 222 333', '711222333', c.patient.email, 'private worry', 'staff-only'])
      assert.ok(!res.body.includes(secret), `${secret} must not be in the .ics`);
    // Staff who read it get the same; a cancelled appointment says so.
    assert.equal(parse((await ics(a.id, c.admin)).body).events[0]!.uid, e.uid);
    await c.move(a.id, 'cancelled');
    assert.equal(parse((await ics(a.id, c.specialists[0]!.token)).body).events[0]!.status, 'CANCELLED');
  });

  it('the .ics is read like the appointment: other patients, specialists and clinics 404, anonymous 401', async () => {
    const a = await c.book({ specialist: 0 });
    assertError(await ics(a.id, c.otherPatient.token), 404, 'not_found');
    assertError(await ics(a.id, c.specialists[1]!.token), 404, 'not_found');
    assertError(await ics(a.id, other.admin, other.org.id), 404, 'not_found');
    assertError(await ics(MISSING_UUID, c.admin), 404, 'not_found');
    assertError(await t.call('GET', `/v1/appointments/${a.id}.ics`, { org: c.org.id }), 401, 'unauthorized');
    assert.equal((await ics(a.id, c.support)).statusCode, 200);
  });

  it('a specialist makes the feed of its own calendar: the URL once, its SHA-256 stored; the feed lists its busy blocks, cancelled ones as CANCELLED, never the patient', async () => {
    const [spec0, spec1] = c.specialists;
    const booked = await c.book({ specialist: 0 });
    const done = await c.book({ specialist: 0 });
    await c.move(done.id, 'checked_in', 'done');
    const cancelled = await c.book({ specialist: 0 });
    await c.move(cancelled.id, 'cancelled');
    const longAgo = await c.book({ specialist: 0 });
    await t.db.query(
      "update appointments set starts_at = now() - interval '120 days', ends_at = now() - interval '120 days' + interval '30 minutes' where id = $1",
      [longAgo.id],
    );
    const cancelledLongAgo = await c.book({ specialist: 0 });
    await c.move(cancelledLongAgo.id, 'cancelled');
    await t.db.query("update appointments set status_changed_at = now() - interval '40 days' where id = $1", [cancelledLongAgo.id]);
    const moved = await c.book({ specialist: 0 });
    const next = dataOf(await c.call('PATCH', `/v1/appointments/${moved.id}`, c.support, { start: await c.nextSlot(0) }));
    const colleague = await c.book({ specialist: 1 });
    dataOf(await c.call('PATCH', `/v1/appointments/${booked.id}`, c.support, { notes: 'staff-only remark' }));

    const res = await makeFeed(spec0!.calendarId, spec0!.token);
    const feed = dataOf(res, 201);
    assert.equal(res.headers['cache-control'], 'no-store');
    assert.deepEqual([feed.calendar_id, feed.rotated], [spec0!.calendarId, false]);
    const token = FEED_URL.exec(feed.url)?.[1];
    assert.ok(token, feed.url);
    const stored = (
      await t.db.query<{ feed_token_hash: string }>('select feed_token_hash from calendars where id = $1', [spec0!.calendarId])
    ).rows[0]!.feed_token_hash;
    assert.equal(stored, createHash('sha256').update(token!).digest('hex'));
    const audit = await t.db.query<{ data: any }>("select data from audit_logs where action = 'calendar.feed_created' and entity_id = $1", [
      spec0!.calendarId,
    ]);
    assert.ok(!JSON.stringify(audit.rows).includes(token!), 'the token is in no audit entry');
    assert.equal(dataOf(await c.call('GET', `/v1/calendars/${spec0!.calendarId}`, c.admin)).feed_enabled, true);

    const got = await fetchFeed(feed.url);
    assert.equal(got.statusCode, 200, got.body);
    assert.equal(got.headers['content-type'], 'text/calendar; charset=utf-8');
    assert.equal(got.headers['cache-control'], 'private, no-store');
    const { cal, events } = parse(got.body);
    assert.equal(cal.getFirstPropertyValue('x-wr-calname'), 'Dr Spec 1');
    const byUid = new Map(events.map((e) => [e.uid.split('@')[0], e]));
    assert.deepEqual(
      [booked.id, done.id, cancelled.id, moved.id, next.id].map((id) => byUid.get(id)?.status),
      ['CONFIRMED', 'CONFIRMED', 'CANCELLED', 'CANCELLED', 'CONFIRMED'],
    );
    for (const id of [longAgo.id, cancelledLongAgo.id, colleague.id]) assert.ok(!byUid.has(id), `${id} is not in the feed`);
    assert.equal(byUid.get(booked.id)!.summary, clinicName, "a busy block with the clinic's name only");
    assert.ok(byUid.get(booked.id)!.description.includes(booked.id), 'and the appointment id');
    for (const secret of ['Zenobia', 'Quillfeather', '711 222 333', '711222333', c.patient.email, 'staff-only'])
      assert.ok(!got.body.includes(secret), `${secret} must not be in the feed`);
    assert.ok(got.body.includes('CLASS:PRIVATE'));

    // Rotation: the old URL stops working, the new one works.
    const rotated = dataOf(await makeFeed(spec0!.calendarId, spec0!.token), 201);
    assert.equal(rotated.rotated, true);
    assert.notEqual(rotated.url, feed.url);
    assertError(await fetchFeed(feed.url), 404, 'not_found');
    assert.equal((await fetchFeed(rotated.url)).statusCode, 200);
    // Removal: 204, the URL is gone; removing again is 204 too.
    dataOf(await c.call('DELETE', `/v1/calendars/${spec0!.calendarId}/feed`, spec0!.token), 204);
    assertError(await fetchFeed(rotated.url), 404, 'not_found');
    assert.equal(dataOf(await c.call('GET', `/v1/calendars/${spec0!.calendarId}`, c.admin)).feed_enabled, false);
    dataOf(await c.call('DELETE', `/v1/calendars/${spec0!.calendarId}/feed`, spec0!.token), 204);
    void spec1;
  });

  it("who makes a feed: the specialist for its own calendar only, locations.manage for any; others 403, another clinic's calendar 404", async () => {
    const [spec0, spec1] = c.specialists;
    assertError(await makeFeed(spec1!.calendarId, spec0!.token), 403, 'forbidden');
    assertError(await c.call('DELETE', `/v1/calendars/${spec1!.calendarId}/feed`, spec0!.token), 403, 'forbidden');
    assertError(await makeFeed(spec1!.calendarId, c.support), 403, 'forbidden');
    assertError(await makeFeed(spec1!.calendarId, c.patient.token), 403, 'forbidden');
    assertError(await makeFeed(spec1!.calendarId, other.admin, other.org.id), 404, 'not_found');
    assertError(await makeFeed(MISSING_UUID, c.admin), 404, 'not_found');
    assertError(await t.call('POST', `/v1/calendars/${spec1!.calendarId}/feed`, { org: c.org.id }), 401, 'unauthorized');
    assert.equal(
      (await t.db.query('select 1 from calendars where id = $1 and feed_token_hash is not null', [spec1!.calendarId])).rows.length,
      0,
    );
    // The administrator (locations.manage) makes one for any calendar, a room's too (an empty feed).
    const feed = dataOf(await makeFeed(spec1!.calendarId, c.admin), 201);
    assert.equal((await fetchFeed(feed.url)).statusCode, 200);
    const room = dataOf(await c.call('POST', '/v1/calendars', c.admin, { kind: 'room', name: 'Room 1', location_id: c.location }), 201);
    const roomFeed = dataOf(await makeFeed(room.id, c.admin), 201);
    assert.deepEqual(parse((await fetchFeed(roomFeed.url)).body).events, []);
    // A specialist who left: its calendar's feed answers 404.
    dataOf(await c.call('DELETE', `/v1/specialists/${spec1!.id}`, c.admin), 204);
    assertError(await fetchFeed(feed.url), 404, 'not_found');
  });

  it('unknown, malformed or unstorable tokens are 404; the public route needs no bearer token and ignores one', async () => {
    const random = `calfeed_${randomBytes(32).toString('base64url')}`;
    const get = (token: string) =>
      t.app.inject({ method: 'GET', url: `/v1/public/calendar-feeds/${token}.ics`, remoteAddress: '203.0.113.11' });
    for (const bad of [random, 'nope', 'calfeed_short', '%00', `calfeed_${'A'.repeat(42)}%00`, `${random}x`])
      assertError(await get(bad), 404, 'not_found');
    // A lone surrogate cannot be percent-decoded at all: the platform's 400 for such a path.
    assertError(await get('calfeed_%ED%A0%80'), 400, 'invalid_url');
    const feed = dataOf(await makeFeed(c.specialists[0]!.calendarId, c.admin), 201);
    const withBearer = await t.app.inject({
      method: 'GET',
      url: feedPath(feed.url),
      headers: { authorization: `Bearer ${c.otherPatient.token}` },
      remoteAddress: '203.0.113.12',
    });
    assert.equal(withBearer.statusCode, 200);
  });

  it('the feed is rate limited per IP, and its token is never logged (the path is redacted)', async () => {
    const feed = dataOf(await makeFeed(c.specialists[0]!.calendarId, c.specialists[0]!.token), 201);
    const token = FEED_URL.exec(feed.url)![1]!;
    lines.length = 0;
    const codes: number[] = [];
    for (let i = 0; i < 6; i++) codes.push((await fetchFeed(feed.url, logged.app, '192.0.2.50')).statusCode);
    assert.deepEqual(codes, [200, 200, 200, 200, 429, 429]);
    const limited = await fetchFeed(feed.url, logged.app, '192.0.2.50');
    assertError(limited, 429, 'rate_limited');
    assert.ok(limited.headers['retry-after']);
    assert.equal((await fetchFeed(feed.url, logged.app, '192.0.2.51')).statusCode, 200, 'another address has its own budget');
    // An unknown token, and the token in a path the router does not know.
    await logged.app.inject({ method: 'GET', url: `/v1/public/calendar-feeds/${token}`, remoteAddress: '192.0.2.52' });
    await logged.app.inject({ method: 'GET', url: `/v1/public//calendar-feeds/${token}.ics?token=${token}`, remoteAddress: '192.0.2.52' });
    assert.ok(lines.length > 0);
    assert.ok(!lines.some((l) => l.includes(token) || l.includes(token.slice(8))), 'the token is in no log line');
    const urls = lines.map((l) => JSON.parse(l).req?.url).filter(Boolean);
    assert.ok(urls.includes('/v1/public/calendar-feeds/[redacted]'), urls.join('\n'));
  });
});
