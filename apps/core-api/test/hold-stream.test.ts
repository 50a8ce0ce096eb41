import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Writable } from 'node:stream';
import type { TestDatabase } from '@clinic/db';
import { createServiceLogger, redactUrl } from '@clinic/http-kit';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/app.ts';
import { createRuntime, type Runtime } from '../src/platform/runtime.ts';
import { dataOf, freshDatabase, MODE, startTestApp, uniqueEmail, uniqueSlug, type TestApp } from './helpers.ts';

/*
 * GET /v1/public/holds/{id}/stream through real listening servers and a raw HTTP client that reads the
 * server-sent events as they come: the seconds left, heartbeats, then exactly one final event and the
 * end. Two instances share one database: on PostgreSQL each LISTENs on its own connection and hears the
 * other's changes through NOTIFY (the routes announce nothing there); on PGlite both are in this process
 * on one database object and share its in-process bus. A hold is expired by moving its expires_at in
 * the database (behind the API's back), which the stream must notice. Nothing waits on the clock: every
 * wait is for an event or for the server to answer differently.
 */

interface Frame {
  event?: string;
  data?: any;
  comment?: string;
}

/** One SSE response read frame by frame; next() is null once the server has ended it. */
class EventReader {
  private buf = '';
  private readonly frames: Frame[] = [];
  private readonly waiting: ((f: Frame | null) => void)[] = [];
  private ended = false;

  constructor(
    readonly req: http.ClientRequest,
    readonly res: http.IncomingMessage,
  ) {
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      this.buf += chunk;
      for (let i = this.buf.indexOf('\n\n'); i >= 0; i = this.buf.indexOf('\n\n')) {
        const block = this.buf.slice(0, i);
        this.buf = this.buf.slice(i + 2);
        const frame: Frame = {};
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) frame.comment = line.slice(1).trim();
          else if (line.startsWith('event: ')) frame.event = line.slice(7);
          else if (line.startsWith('data: ')) frame.data = JSON.parse(line.slice(6));
        }
        this.push(frame);
      }
    });
    const end = () => {
      if (this.ended) return;
      this.ended = true;
      for (const w of this.waiting.splice(0)) w(null);
    };
    res.on('end', end);
    res.on('close', end);
  }

  private push(f: Frame) {
    const w = this.waiting.shift();
    if (w) w(f);
    else this.frames.push(f);
  }

  next(): Promise<Frame | null> {
    const f = this.frames.shift();
    if (f) return Promise.resolve(f);
    if (this.ended) return Promise.resolve(null);
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** Frames up to and including the first that matches; fails if the stream ends first. */
  async until(match: (f: Frame) => boolean): Promise<Frame[]> {
    const seen: Frame[] = [];
    for (;;) {
      const f = await this.next();
      assert.ok(f, `the stream ended before the awaited frame; saw ${JSON.stringify(seen)}`);
      seen.push(f);
      if (match(f)) return seen;
    }
  }

  /** Every frame until the server ends the stream. */
  async rest(): Promise<Frame[]> {
    const out: Frame[] = [];
    for (let f = await this.next(); f; f = await this.next()) out.push(f);
    return out;
  }

  close() {
    this.req.destroy();
  }
}

type Opened = { status: number; headers: http.IncomingHttpHeaders; reader: EventReader; body: any };

/** GET the stream; a non-200 answer is read whole as JSON. */
function openStream(base: string, path: string, headers: Record<string, string> = {}): Promise<Opened> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${base}${path}`, { headers: { accept: 'text/event-stream', ...headers }, agent: false }, (res) => {
      const reader = new EventReader(req, res);
      if (res.statusCode === 200) return resolve({ status: 200, headers: res.headers, reader, body: null });
      let text = '';
      res.removeAllListeners('data');
      res.on('data', (d) => {
        text += d;
      });
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, reader, body: JSON.parse(text) }));
    });
    req.on('error', reject);
  });
}

async function listen(app: FastifyInstance): Promise<string> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}

async function send(base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(base + path, {
    method,
    headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, text, json: () => JSON.parse(text) };
}

/** The next Monday (UTC date) at least a week ahead. */
function nextMonday(): string {
  const d = new Date(Date.now() + 7 * 86_400_000);
  while (d.getUTCDay() !== 1) d.setUTCDate(d.getUTCDate() + 1);
  return d.toISOString().slice(0, 10);
}

const streamPath = (id: string) => `/v1/public/holds/${id}/stream`;
const isFinal = (f: Frame) => f.event === 'released' || f.event === 'converted' || f.event === 'expired';

describe('the hold stream', () => {
  let database: TestDatabase;
  let a: TestApp;
  let b: TestApp;
  let baseA: string;
  let baseB: string;
  let org: { id: string; slug: string };
  let service: string;
  let specialist: string;
  const free: string[] = [];
  const monday = nextMonday();

  before(async () => {
    database = await freshDatabase();
    const env: Record<string, string> = {
      RATELIMIT_PUBLIC_LIMIT: '100000',
      RATELIMIT_HOLDS_PER_IP: '100000',
      RATELIMIT_API_LIMIT: '100000',
      // PostgreSQL: the URL each instance LISTENs with (the runtime's pool is the test database's).
      ...(MODE === 'services' ? { DATABASE_URL: database.url! } : {}),
    };
    a = await startTestApp({ database, env });
    // B bounds open streams per address at 2 (the disconnect test) and is the "other instance".
    b = await startTestApp({ database, env: { ...env, SCHEDULING_HOLD_STREAMS_PER_IP: '2' }, migrate: false, issuer: a.issuer });
    baseA = await listen(a.app);
    baseB = await listen(b.app);

    org = await a.createOrg({ slug: uniqueSlug('stream') });
    await a.publishPrivacyNotice(org.id);
    const admin = (await a.addMember(org.id, uniqueEmail('st-admin'), 'admin')).token;
    const location = dataOf(
      await a.call('POST', `/v1/organizations/${org.id}/locations`, { token: admin, body: { name: 'Central', timezone: 'UTC' } }),
      201,
    ).id;
    const member = await a.addMember(org.id, uniqueEmail('st-spec'), 'specialist');
    specialist = dataOf(
      await a.call('POST', '/v1/specialists', {
        token: admin,
        org: org.id,
        body: { user_id: member.userId, display_name: 'Dr Stream', bookable_online: true, location_ids: [location] },
      }),
      201,
    ).id;
    dataOf(
      await a.call('PUT', `/v1/specialists/${specialist}/availability`, {
        token: admin,
        org: org.id,
        body: { rules: [1].map((weekday) => ({ location_id: location, weekday, start: '06:00', end: '22:00' })) },
      }),
    );
    service = dataOf(
      await a.call('POST', '/v1/services', {
        token: admin,
        org: org.id,
        body: {
          name: 'Stream session',
          duration_minutes: 30,
          price_minor: 1000,
          currency: 'EUR',
          mode: 'in_person',
          is_public: true,
          slot_interval_minutes: 30,
          location_ids: [location],
          specialist_ids: [specialist],
        },
      }),
      201,
    ).id;
    const slots = await send(
      baseA,
      'GET',
      `/v1/public/availability?organization=${org.id}&service_id=${service}&from=${monday}&to=${monday}&time_zone=UTC`,
    );
    assert.equal(slots.status, 200, slots.text);
    free.push(...slots.json().data.slots.map((s: { start: string }) => s.start));
    assert.ok(free.length >= 20, `enough free slots (${free.length})`);
  });
  after(async () => {
    await b?.close();
    await a?.close();
    await database?.drop();
  });

  /** A live hold on a slot no other test uses. */
  const hold = async (): Promise<{ id: string; secret: string; expires_at: string }> => {
    const start = free.shift();
    assert.ok(start, 'a free slot is left');
    const res = await send(baseA, 'POST', '/v1/public/holds', {
      organization: org.id,
      service_id: service,
      specialist_id: specialist,
      start,
    });
    assert.equal(res.status, 201, res.text);
    return res.json().data;
  };
  const follow = async (base: string, h: { id: string; secret: string }) => {
    const s = await openStream(base, streamPath(h.id), { 'x-hold-secret': h.secret });
    assert.equal(s.status, 200, JSON.stringify(s.body));
    return s;
  };
  /** The final event, after which the server ends the stream: exactly one. */
  const finalOf = async (reader: EventReader) => {
    const frames = await reader.until(isFinal);
    assert.ok(
      frames.slice(0, -1).every((f) => !isFinal(f)),
      'one final event',
    );
    assert.equal(await reader.next(), null, 'the server ends the stream after the final event');
    return frames.at(-1)!;
  };

  it('counts the seconds left down, from the first event at once, with a keep-alive comment for proxies', async () => {
    const h = await hold();
    const s = await follow(baseA, h);
    assert.match(String(s.headers['content-type']), /^text\/event-stream/);
    assert.equal(s.headers['cache-control'], 'no-cache, no-transform');
    assert.ok(s.headers['x-request-id'] && s.headers['x-ratelimit-limit'], 'the request id and the per-IP budget, as on every route');
    const first = await s.reader.next();
    assert.equal(first?.event, 'remaining');
    assert.equal(first.data.expires_at, new Date(h.expires_at).toISOString());
    assert.ok(first.data.seconds_left > 0 && first.data.seconds_left <= a.config.scheduling.holdMinutes * 60, JSON.stringify(first));
    // Until the first heartbeat (every 15 s): the countdown keeps falling, one whole second at a time.
    const frames = await s.reader.until((f) => f.comment !== undefined);
    const seconds = [first, ...frames].filter((f) => f.event === 'remaining').map((f) => f.data.seconds_left as number);
    assert.ok(seconds.length >= 3, `several countdown events before the heartbeat: ${seconds}`);
    for (let i = 1; i < seconds.length; i++) assert.ok(seconds[i]! < seconds[i - 1]!, `seconds left decrease: ${seconds}`);
    assert.equal(frames.at(-1)!.comment, 'keep-alive');
    s.reader.close();
  });

  it('released on the same instance: `released`, then the end', async () => {
    const h = await hold();
    const s = await follow(baseA, h);
    assert.equal((await s.reader.next())?.event, 'remaining');
    const del = await send(baseA, 'DELETE', `/v1/public/holds/${h.id}`, undefined, { 'x-hold-secret': h.secret });
    assert.equal(del.status, 200, del.text);
    assert.deepEqual((await finalOf(s.reader)).data, { status: 'released' });
  });

  it('released on another instance: every stream of the hold on the first one hears it', async () => {
    const h = await hold();
    const streams = [await follow(baseA, h), await follow(baseA, h), await follow(baseA, h)];
    for (const s of streams) assert.equal((await s.reader.next())?.event, 'remaining');
    if (MODE === 'services') {
      // One listening connection per instance, not one per stream.
      const { rows } = await a.db.query<{ n: number }>(
        `select count(*)::int as n from pg_stat_activity where datname = current_database() and application_name = 'clinic-platform-hold-events'`,
      );
      assert.equal(rows[0]!.n, 1, 'only A listens so far (B has had no stream)');
    }
    const del = await send(baseB, 'DELETE', `/v1/public/holds/${h.id}`, undefined, { 'x-hold-secret': h.secret });
    assert.equal(del.status, 200, del.text);
    for (const s of streams) assert.deepEqual((await finalOf(s.reader)).data, { status: 'released' });
  });

  it('a change made while the listening connection was down still arrives (PostgreSQL)', {
    skip: MODE !== 'services' && 'LISTEN is PostgreSQL only',
  }, async () => {
    const h = await hold();
    const s = await follow(baseA, h);
    assert.equal((await s.reader.next())?.event, 'remaining');
    // Cut A's listening connection, then release on B while A cannot hear: its NOTIFY is lost to A.
    const { rows } = await a.db.query<{ n: number }>(
      `select count(pg_terminate_backend(pid))::int as n from pg_stat_activity
       where datname = current_database() and application_name = 'clinic-platform-hold-events'`,
    );
    assert.equal(rows[0]!.n, 1);
    const del = await send(baseB, 'DELETE', `/v1/public/holds/${h.id}`, undefined, { 'x-hold-secret': h.secret });
    assert.equal(del.status, 200, del.text);
    // A listens again and reads its followed holds once more.
    assert.deepEqual((await finalOf(s.reader)).data, { status: 'released' });
  });

  it('booked (on the other instance): `converted` with the appointment id; reopened, it answers that at once', async () => {
    const h = await hold();
    const s = await follow(baseA, h);
    assert.equal((await s.reader.next())?.event, 'remaining');
    const booked = await send(baseB, 'POST', '/v1/public/bookings', {
      organization: org.slug,
      hold_id: h.id,
      secret: h.secret,
      name: 'Stream Guest',
      email: 'stream.guest@example.com',
      consents: [{ purpose_code: 'org_privacy_notice', purpose_version: 1 }],
    });
    assert.equal(booked.status, 201, booked.text);
    const appointmentId = booked.json().data.id;
    const final = await finalOf(s.reader);
    assert.equal(final.event, 'converted');
    assert.deepEqual(final.data, { status: 'converted', appointment_id: appointmentId });

    // An ended hold: the final event at once, then the end (the secret as a query parameter, for EventSource).
    const again = await openStream(baseB, `${streamPath(h.id)}?secret=${encodeURIComponent(h.secret)}`);
    assert.equal(again.status, 200);
    const frames = [await again.reader.next(), await again.reader.next()];
    assert.deepEqual(frames, [{ event: 'converted', data: { status: 'converted', appointment_id: appointmentId } }, null]);
  });

  it('expired in the database: the stream notices, says `expired`, and the hold is ended there', async () => {
    const h = await hold();
    const s = await follow(baseA, h);
    assert.equal((await s.reader.next())?.event, 'remaining');
    await a.db.query('update holds set expires_at = clock_timestamp() where id = $1', [h.id]);
    assert.deepEqual((await finalOf(s.reader)).data, { status: 'expired' });
    const { rows } = await a.db.query<{ status: string; active: boolean[] }>(
      `select h.status, array(select c.active from calendar_claims c where c.organization_id = h.organization_id and c.hold_id = h.id) as active
       from holds h where h.id = $1`,
      [h.id],
    );
    assert.deepEqual(rows[0], { status: 'expired', active: [false] }, 'ended as expired and its slot freed, not only said');
    const book = await send(baseB, 'POST', '/v1/public/bookings', {
      organization: org.slug,
      hold_id: h.id,
      secret: h.secret,
      name: 'Late Guest',
      email: 'late.guest@example.com',
      consents: [{ purpose_code: 'org_privacy_notice', purpose_version: 1 }],
    });
    assert.equal(book.status, 409, book.text);
    assert.equal(book.json().error.code, 'hold_ended');
  });

  it('404 for a wrong, missing or foreign secret and for no hold, the same answer', async () => {
    const h = await hold();
    const other = await hold();
    for (const [path, headers] of [
      [streamPath(h.id), { 'x-hold-secret': 'hold_wrong' }],
      [streamPath(h.id), { 'x-hold-secret': other.secret }],
      [`${streamPath(h.id)}?secret=hold_wrong`, {}],
      [streamPath(h.id), {}],
      [streamPath('01900000-0000-7000-8000-000000000000'), { 'x-hold-secret': h.secret }],
    ] as const) {
      const res = await openStream(baseA, path, headers);
      assert.equal(res.status, 404, `${path}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.error.code, 'not_found');
      assert.equal(res.body.error.message, 'No hold with this id and secret.');
    }
  });

  it('a client that goes away frees its stream: the per-address bound counts open streams only', async () => {
    const h = await hold();
    // Refused openings (404) take nothing.
    for (let i = 0; i < 3; i++) assert.equal((await openStream(baseB, streamPath(h.id), { 'x-hold-secret': 'nope' })).status, 404);
    const one = await follow(baseB, h);
    const two = await follow(baseB, h);
    const three = await openStream(baseB, streamPath(h.id), { 'x-hold-secret': h.secret });
    assert.equal(three.status, 429, JSON.stringify(three.body));
    assert.equal(three.body.error.code, 'rate_limited');
    one.reader.close();
    // Until the server has seen the disconnect (no deadline: a leak would hang here until the runner's time-out).
    let reopened: Opened;
    for (;;) {
      reopened = await openStream(baseB, streamPath(h.id), { 'x-hold-secret': h.secret });
      if (reopened.status === 200) break;
      assert.equal(reopened.status, 429);
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal((await reopened.reader.next())?.event, 'remaining');
    two.reader.close();
    reopened.reader.close();
  });

  describe('an instance that closes', () => {
    let logged: { rt: Runtime; app: FastifyInstance };
    let base: string;
    const lines: string[] = [];
    before(async () => {
      const sink = new Writable({
        write(chunk, _enc, done) {
          lines.push(...String(chunk).split('\n').filter(Boolean));
          done();
        },
      });
      const rt = await createRuntime(a.config, {
        db: a.db,
        devIssuer: a.issuer,
        skipMigrations: true,
        logger: createServiceLogger({ level: 'info' }, sink),
      });
      logged = { rt, app: await buildApp(rt) };
      base = await listen(logged.app);
    });
    after(() => logged?.rt.close());

    it('app.close() ends its open streams (no final event: the hold goes on) and does not hang; the secret in the URL is never logged', async () => {
      const h = await hold();
      const path = `${streamPath(h.id)}?secret=${encodeURIComponent(h.secret)}`;
      const streams = [await openStream(base, path), await openStream(base, path)];
      for (const s of streams) {
        assert.equal(s.status, 200, JSON.stringify(s.body));
        assert.equal((await s.reader.next())?.event, 'remaining');
      }
      await logged.app.close();
      for (const s of streams) assert.deepEqual((await s.reader.rest()).filter(isFinal), [], 'ended without a final event');
      // The hold itself is untouched, and a stream on another instance carries on.
      const other = await follow(baseA, h);
      assert.equal((await other.reader.next())?.event, 'remaining');
      other.reader.close();

      const logLines = lines.filter((l) => l.includes('/stream'));
      assert.ok(logLines.length > 0, 'the requests were logged');
      for (const l of logLines) assert.ok(!l.includes(h.secret), `a log line holds the secret: ${l}`);
      assert.ok(
        logLines.some((l) => l.includes('secret=[redacted]')),
        logLines.join('\n'),
      );
      assert.equal(redactUrl(path), `${streamPath(h.id)}?secret=[redacted]`);
    });
  });
});
