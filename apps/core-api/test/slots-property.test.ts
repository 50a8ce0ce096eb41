import assert from 'node:assert/strict';
import { after, before, describe, it, mock } from 'node:test';
import fc from 'fast-check';
import { dataOf, startTestApp, uniqueEmail, uniqueSlug, type TestApp } from './helpers.ts';

/*
 * GET /v1/public/availability against a reference (docs/scheduling.md "Slots"). The reference is written
 * here from the rules as stated, minute by minute, with Intl for the zones (never the database): it marks
 * the open minutes of each specialist and location (weekly rules and extra hours, minus time off), cuts
 * them into windows, puts the grid in each window, and keeps the starts whose slot fits the window, whose
 * occupied time (with the buffers) meets no active claim, within the booking rules and the range.
 * fast-check draws the inputs: rules, exceptions, appointments and holds, grids, durations, notice and
 * days ahead, in four zones with their daylight-saving changes (Lord Howe moves by 30 minutes), over
 * ranges that cross a change. Runs are seeded and bounded (PROPERTY_RUNS, PROPERTY_SEED to explore).
 */

const ZONES = ['Europe/Bucharest', 'America/New_York', 'Asia/Kolkata', 'Australia/Lord_Howe'] as const;
type Zone = (typeof ZONES)[number];
const VIEWERS = [...ZONES, 'UTC'];

/** Local dates with a daylight-saving change (Kolkata has none: ordinary dates). */
const CHANGES: Record<Zone, string[]> = {
  'Europe/Bucharest': ['2027-03-28', '2027-10-31', '2028-03-26', '2028-10-29'],
  'America/New_York': ['2027-03-14', '2027-11-07', '2028-03-12', '2028-11-05'],
  'Asia/Kolkata': ['2027-03-28', '2027-11-07'],
  'Australia/Lord_Howe': ['2027-04-04', '2027-10-03', '2028-04-02', '2028-10-01'],
};

const MIN = 60_000;
const DAY = 86_400_000;

// ---------------------------------------------------------------------------------------------
// The reference: wall-clock arithmetic with Intl.

const formats = new Map<string, Intl.DateTimeFormat>();
const offsets = new Map<string, number>();

/** The zone's offset from UTC at an instant, in milliseconds (Intl, remembered). */
function offsetAt(t: number, zone: string): number {
  const key = `${zone}|${t}`;
  const hit = offsets.get(key);
  if (hit !== undefined) return hit;
  let f = formats.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formats.set(zone, f);
  }
  const p = Object.fromEntries(f.formatToParts(new Date(t)).map((x) => [x.type, x.value]));
  const v = Date.UTC(+p.year!, +p.month! - 1, +p.day!, +p.hour!, +p.minute!, +p.second!) - (t - (t % 1000));
  offsets.set(key, v);
  return v;
}

/**
 * The local wall-clock time of an instant in a zone, as the milliseconds of that wall time read as UTC.
 * The offset is read once an hour, and minute by minute in an hour that holds a change.
 */
function label(t: number, zone: string): number {
  const hour = Math.floor(t / 3_600_000) * 3_600_000;
  const a = offsetAt(hour, zone);
  return t + (a === offsetAt(hour + 3_600_000 - MIN, zone) ? a : offsetAt(Math.floor(t / MIN) * MIN, zone));
}

/**
 * The instant of a local date and minute of the day (0..1440) in a zone, as docs/scheduling.md pins it:
 * the first moment the clock shows that time (the earlier of a fall-back's two), and for a time that a
 * spring-forward skips, the moment of the change (the clock jumps past it).
 */
function instantOf(date: string, minute: number, zone: string): number {
  const wall = Date.parse(`${date}T00:00:00Z`) + minute * MIN;
  const offsets = new Set<number>();
  for (let h = -26; h <= 26; h++) offsets.add(label(wall + h * 3_600_000, zone) - (wall + h * 3_600_000));
  const exact = [...offsets]
    .map((o) => wall - o)
    .filter((t) => label(t, zone) === wall)
    .sort((a, b) => a - b);
  if (exact.length) return exact[0]!;
  // A gap: the first minute whose wall time is past it.
  const lo = Math.min(...[...offsets].map((o) => wall - o));
  const hi = Math.max(...[...offsets].map((o) => wall - o));
  for (let t = lo; t <= hi; t += MIN) if (label(t, zone) > wall) return t;
  throw new Error(`no instant for ${date} +${minute} in ${zone}`);
}

const minuteOfDay = (t: number, zone: string) => (((label(t, zone) % DAY) + DAY) % DAY) / MIN;
const addDays = (date: string, n: number) => new Date(Date.parse(`${date}T00:00:00Z`) + n * DAY).toISOString().slice(0, 10);
const isoWeekday = (date: string) => ((new Date(`${date}T00:00:00Z`).getUTCDay() + 6) % 7) + 1;

interface Rule {
  location: number;
  weekday: number;
  start: number;
  end: number;
  zone: string | null;
  from: string | null;
  until: string | null;
}
interface Exception {
  kind: 'time_off' | 'extra_hours';
  date: string;
  location: number | null;
  start: number | null;
  end: number | null;
  zone: string;
}
type ClaimKind = 'appointment' | 'cancelled' | 'hold' | 'expired_hold' | 'released_hold';
interface Claim {
  kind: ClaimKind;
  start: number;
  end: number;
}
interface Spec {
  rules: Rule[];
  exceptions: Exception[];
  claims: Claim[];
}
interface Case {
  zones: Zone[];
  specialists: Spec[];
  duration: number;
  bufferBefore: number;
  bufferAfter: number;
  step: number;
  notice: number;
  daysAhead: number;
  serviceAtLocations: boolean;
  viewer: string;
  from: string;
  to: string;
  now: number;
}

interface Slot {
  start: number;
  specialist: number;
  location: number;
}

/** The free slots of a case, minute by minute. */
function reference(c: Case): Slot[] {
  const zoneOfLocation = (l: number) => c.zones[l]!;
  const fromI = instantOf(c.from, 0, c.viewer);
  const toI = instantOf(addDays(c.to, 1), 0, c.viewer);
  const d0 = fromI - 5 * DAY;
  const size = (toI - d0) / MIN + 10 * 1440;
  const idx = (t: number) => Math.round((t - d0) / MIN);
  const earliest = c.now + c.notice * MIN;
  const latest = c.now + c.daysAhead * DAY;
  const dates: string[] = [];
  for (let d = addDays(c.from, -4); d <= addDays(c.to, 4); d = addDays(d, 1)) dates.push(d);
  const out: Slot[] = [];
  c.specialists.forEach((sp, si) => {
    const busy = new Uint8Array(size);
    for (const cl of sp.claims) {
      if (cl.kind === 'cancelled' || cl.kind === 'released_hold' || cl.kind === 'expired_hold') continue;
      for (let i = Math.max(0, idx(cl.start)); i < Math.min(size, idx(cl.end)); i++) busy[i] = 1;
    }
    for (let l = 0; l < c.zones.length; l++) {
      const open = new Uint8Array(size);
      const mark = (date: string, start: number, end: number, zone: string, v: 0 | 1) => {
        const a = instantOf(date, start, zone);
        const b = instantOf(date, end, zone);
        for (let i = Math.max(0, idx(a)); i < Math.min(size, idx(b)); i++) open[i] = v;
      };
      for (const date of dates) {
        for (const r of sp.rules) {
          if (r.location !== l || r.weekday !== isoWeekday(date)) continue;
          if ((r.from && date < r.from) || (r.until && date > r.until)) continue;
          mark(date, r.start, r.end, r.zone ?? zoneOfLocation(l), 1);
        }
        for (const e of sp.exceptions)
          if (e.kind === 'extra_hours' && e.date === date && e.location === l) mark(date, e.start!, e.end!, e.zone, 1);
      }
      for (const e of sp.exceptions) {
        if (e.kind !== 'time_off' || (e.location !== null && e.location !== l)) continue;
        mark(e.date, e.start ?? 0, e.end ?? 1440, e.zone, 0);
      }
      // Each window: a run of open minutes.
      for (let i = 0; i < size; ) {
        if (!open[i]) {
          i++;
          continue;
        }
        let j = i;
        while (j < size && open[j]) j++;
        const ws = d0 + i * MIN;
        const we = d0 + j * MIN;
        // The grid: from the window's start and again from each local midnight in it, the first minute
        // whose local time is a multiple of the step, then every step minutes of elapsed time.
        const zone = zoneOfLocation(l);
        const localDay = (x: number) => Math.floor(label(x, zone) / DAY);
        let next: number | null = null;
        for (let g = ws; g + c.duration * MIN <= we; g += MIN) {
          if (g === ws || localDay(g) !== localDay(g - MIN)) next = null;
          if (next === null && minuteOfDay(g, zone) % c.step === 0) next = g;
          if (g !== next) continue;
          next = g + c.step * MIN;
          if (g < fromI || g >= toI || g < earliest || g >= latest) continue;
          let free = true;
          for (let k = idx(g) - c.bufferBefore; k < idx(g) + c.duration + c.bufferAfter; k++) if (busy[k]) free = false;
          if (free) out.push({ start: g, specialist: si, location: l });
        }
        i = j;
      }
    }
  });
  return out;
}

// ---------------------------------------------------------------------------------------------
// The inputs.

const fiveMinutes = (lo: number, hi: number) => fc.integer({ min: lo / 5, max: hi / 5 }).map((i) => i * 5);
/** Starts anywhere, often in the small hours where the changes are. */
const startArb = fc.oneof(fiveMinutes(0, 1435), fiveMinutes(0, 300), fiveMinutes(60, 270));
const lengthArb = fc.oneof(fiveMinutes(5, 240), fiveMinutes(60, 720), fiveMinutes(120, 600));

/** null five times in six. */
const sometimes = <T>(arb: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 5, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: arb as fc.Arbitrary<T | null> });

function caseArb(): fc.Arbitrary<Case> {
  return fc
    .record({
      primary: fc.constantFrom(...ZONES),
      second: fc.option(fc.constantFrom(...ZONES), { freq: 3 }),
      change: fc.nat(3),
      fromShift: fc.integer({ min: -3, max: 0 }),
      toShift: fc.integer({ min: 0, max: 3 }),
      viewer: fc.constantFrom(...VIEWERS),
      nowShift: fc.integer({ min: -12 * 1440, max: 2 * 1440 }),
      nowSeconds: fc.nat(59),
      duration: fc.oneof(fiveMinutes(5, 120), fc.constantFrom(15, 30, 45, 60), fc.integer({ min: 5, max: 200 })),
      bufferBefore: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 60 })),
      bufferAfter: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 60 })),
      step: fc.oneof(fc.constantFrom(5, 10, 15, 20, 30, 45, 60, 90, 120), fc.integer({ min: 5, max: 120 })),
      notice: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 2 * 1440 })),
      daysAhead: fc.oneof(fc.integer({ min: 1, max: 40 }), fc.constant(60)),
      serviceAtLocations: fc.boolean(),
      specialists: fc.array(
        fc.record({
          rules: fc.array(
            fc.record({
              location: fc.nat(1),
              weekday: fc.integer({ min: 1, max: 7 }),
              // Mostly a weekday of a day in the range.
              day: fc.option(fc.nat(6), { freq: 5 }),
              start: startArb,
              length: lengthArb,
              wholeDay: fc.oneof({ weight: 9, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
              zone: sometimes(fc.constantFrom(...ZONES)),
              from: fc.option(fc.integer({ min: -5, max: 5 }), { freq: 2 }),
              until: fc.option(fc.integer({ min: -5, max: 5 }), { freq: 2 }),
            }),
            { minLength: 1, maxLength: 8 },
          ),
          exceptions: fc.array(
            fc.record({
              kind: fc.constantFrom('time_off', 'time_off', 'extra_hours'),
              day: fc.integer({ min: -4, max: 4 }),
              location: fc.option(fc.nat(1), { freq: 2 }),
              partial: fc.boolean(),
              start: startArb,
              length: lengthArb,
              zone: sometimes(fc.constantFrom(...ZONES)),
            }),
            { maxLength: 4 },
          ),
          claims: fc.array(
            fc.record({
              kind: fc.constantFrom<ClaimKind>('appointment', 'appointment', 'cancelled', 'hold', 'expired_hold', 'released_hold'),
              at: fc.integer({ min: 0, max: 11 * 1440 }),
              length: fc.integer({ min: 5, max: 300 }),
            }),
            { maxLength: 8 },
          ),
        }),
        { minLength: 1, maxLength: 2 },
      ),
    })
    .map((g): Case => {
      const zones: Zone[] = g.second && g.second !== g.primary ? [g.primary, g.second] : [g.primary];
      const list = CHANGES[g.primary];
      const anchor = list[g.change % list.length]!;
      const from = addDays(anchor, g.fromShift);
      const to = addDays(anchor, g.toShift);
      const base = Date.parse(`${from}T00:00:00Z`) - DAY;
      const specialists = g.specialists.map((s): Spec => {
        const rules: Rule[] = [];
        for (const r of s.rules) {
          const start = r.wholeDay ? 0 : r.start;
          const end = r.wholeDay ? 1440 : Math.min(1440, r.start + r.length);
          if (end <= start) continue;
          const location = r.location % zones.length;
          const weekday = r.day === null ? r.weekday : isoWeekday(addDays(from, r.day % (g.toShift - g.fromShift + 1)));
          let [f, u] = [r.from === null ? null : addDays(anchor, r.from), r.until === null ? null : addDays(anchor, r.until)];
          if (f && u && u < f) [f, u] = [u, f];
          // The API refuses two rules of one weekday whose hours meet (wherever they are): keep the first.
          if (rules.some((o) => o.weekday === weekday && o.start < end && start < o.end)) continue;
          rules.push({ location, weekday, start, end, zone: r.zone, from: f, until: u });
        }
        const exceptions = s.exceptions.map((e): Exception => {
          const extra = e.kind === 'extra_hours';
          const location = extra ? (e.location ?? 0) % zones.length : e.location === null ? null : e.location % zones.length;
          const partial = extra || e.partial;
          return {
            kind: e.kind as Exception['kind'],
            date: addDays(anchor, e.day),
            location,
            start: partial ? e.start : null,
            end: partial ? Math.min(1440, e.start + e.length) : null,
            zone: e.zone ?? zones[location ?? 0]!,
          };
        });
        // Active claims of one calendar never overlap (the exclusion constraint): drop those that would.
        const claims: Claim[] = [];
        for (const cl of s.claims) {
          const c = { kind: cl.kind, start: base + cl.at * MIN, end: base + (cl.at + cl.length) * MIN };
          const active = (k: ClaimKind) => k === 'appointment' || k === 'hold' || k === 'expired_hold';
          if (active(c.kind) && claims.some((o) => active(o.kind) && o.start < c.end && c.start < o.end)) continue;
          claims.push(c);
        }
        return { rules, exceptions, claims };
      });
      return {
        zones,
        specialists,
        duration: g.duration,
        bufferBefore: g.bufferBefore,
        bufferAfter: g.bufferAfter,
        step: g.step,
        notice: g.notice,
        daysAhead: g.daysAhead,
        serviceAtLocations: g.serviceAtLocations,
        viewer: g.viewer,
        from,
        to,
        now: Date.parse(`${from}T00:00:00Z`) + g.nowShift * MIN + g.nowSeconds * 1000,
      };
    });
}

const hhmm = (m: number) => `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;

describe('free slots: the API against a minute-by-minute reference', () => {
  let t: TestApp;
  let org: { id: string; slug: string };
  let admin: string;
  const locations: Record<string, string> = {};
  const pool: { id: string; calendar: string }[] = [];
  let services = 0;

  before(async () => {
    t = await startTestApp({
      env: {
        RATELIMIT_PUBLIC_LIMIT: '1000000',
        RATELIMIT_API_LIMIT: '1000000',
        RATELIMIT_PUBLIC_RESOLVE_LIMIT: '1000000',
        RATELIMIT_HOLDS_PER_IP: '1000000',
        RATELIMIT_HOLDS_PER_ORG: '1000000',
      },
    });
    org = await t.createOrg({ slug: uniqueSlug('slots') });
    admin = (await t.addMember(org.id, uniqueEmail('sl-admin'), 'admin')).token;
    for (const zone of ZONES) {
      locations[zone] = dataOf(
        await t.call('POST', `/v1/organizations/${org.id}/locations`, { token: admin, body: { name: zone, timezone: zone } }),
        201,
      ).id;
    }
    for (let i = 0; i < 2; i++) {
      const member = await t.addMember(org.id, uniqueEmail(`sl-spec${i}`), 'specialist');
      const id = dataOf(
        await t.call('POST', '/v1/specialists', {
          token: admin,
          org: org.id,
          body: { user_id: member.userId, display_name: `Dr ${i}`, bookable_online: true, location_ids: Object.values(locations) },
        }),
        201,
      ).id;
      const calendar = (await t.db.query<{ id: string }>('select id from calendars where specialist_id = $1', [id])).rows[0]!.id;
      pool.push({ id, calendar });
    }
  });
  after(() => t?.close());

  const availability = async (query: string, now?: number) => {
    if (now !== undefined) mock.timers.enable({ apis: ['Date'], now });
    try {
      const res = await t.app.inject({
        method: 'GET',
        url: `/v1/public/availability?organization=${org.slug}&${query}`,
        remoteAddress: '198.51.100.9',
      });
      assert.equal(res.statusCode, 200, res.body);
      return res.json().data as {
        slots: { start: string; end: string; start_local: string; specialist_id: string; location_id: string }[];
      };
    } finally {
      if (now !== undefined) mock.timers.reset();
    }
  };

  /** Writes a case through the API (availability, the service) and the database (claims); returns the service. */
  async function setUp(c: Case): Promise<string> {
    const ids = pool.map((p) => p.id);
    await t.db.query('delete from holds where specialist_id = any($1)', [ids]);
    await t.db.query('delete from appointments where specialist_id = any($1)', [ids]);
    const locationOf = (l: number) => locations[c.zones[l]!]!;
    for (const [i, sp] of c.specialists.entries()) {
      dataOf(
        await t.call('PUT', `/v1/specialists/${pool[i]!.id}/availability`, {
          token: admin,
          org: org.id,
          body: {
            rules: sp.rules.map((r) => ({
              location_id: locationOf(r.location),
              weekday: r.weekday,
              start: hhmm(r.start),
              end: hhmm(r.end),
              ...(r.zone ? { time_zone: r.zone } : {}),
              effective_from: r.from,
              effective_until: r.until,
            })),
            exceptions: sp.exceptions.map((e) => ({
              kind: e.kind,
              date: e.date,
              location_id: e.location === null ? null : locationOf(e.location),
              start: e.start === null ? null : hhmm(e.start),
              end: e.end === null ? null : hhmm(e.end),
              time_zone: e.zone,
            })),
          },
        }),
      );
    }
    const service = dataOf(
      await t.call('POST', '/v1/services', {
        token: admin,
        org: org.id,
        body: {
          name: `Property ${++services}`,
          duration_minutes: c.duration,
          buffer_before_minutes: c.bufferBefore,
          buffer_after_minutes: c.bufferAfter,
          slot_interval_minutes: c.step,
          min_notice_minutes: c.notice,
          max_days_ahead: c.daysAhead,
          price_minor: 100,
          currency: 'EUR',
          mode: 'in_person',
          is_public: true,
          location_ids: c.serviceAtLocations ? c.zones.map((z) => locations[z]!) : [],
          specialist_ids: c.specialists.map((_, i) => pool[i]!.id),
        },
      }),
      201,
    ).id;
    // Claims as booking leaves them: an appointment's (its slot with buffers), a hold's until it
    // expires (absolute instants, so that the database's clock does not matter), freed ones inactive.
    for (const [i, sp] of c.specialists.entries()) {
      for (const cl of sp.claims) {
        const during = `[${new Date(cl.start).toISOString()},${new Date(cl.end).toISOString()})`;
        const common = [org.id, service, pool[i]!.id, new Date(cl.start), new Date(cl.end)];
        if (cl.kind === 'appointment' || cl.kind === 'cancelled') {
          const a = await t.db.query<{ id: string }>(
            `insert into appointments (organization_id, service_id, specialist_id, starts_at, ends_at, mode, source, guest_email, status)
             values ($1, $2, $3, $4, $5, 'in_person', 'guest', 'p@example.test', $6) returning id`,
            [...common, cl.kind === 'appointment' ? 'scheduled' : 'cancelled'],
          );
          await t.db.query(
            'insert into calendar_claims (organization_id, calendar_id, during, appointment_id, active) values ($1, $2, $3, $4, $5)',
            [org.id, pool[i]!.calendar, during, a.rows[0]!.id, cl.kind === 'appointment'],
          );
        } else {
          const expires = cl.kind === 'expired_hold' ? '2001-01-01T00:00:00Z' : '2100-01-01T00:00:00Z';
          const h = await t.db.query<{ id: string }>(
            `insert into holds (organization_id, service_id, specialist_id, starts_at, ends_at, secret_hash, status, expires_at, created_at)
             values ($1, $2, $3, $4, $5, repeat('0', 64), $6, $7, '2000-01-01T00:00:00Z') returning id`,
            [...common, cl.kind === 'released_hold' ? 'released' : 'live', expires],
          );
          await t.db.query(
            'insert into calendar_claims (organization_id, calendar_id, during, hold_id, expires_at, active) values ($1, $2, $3, $4, $5, $6)',
            [org.id, pool[i]!.calendar, during, h.rows[0]!.id, expires, cl.kind !== 'released_hold'],
          );
        }
      }
    }
    return service;
  }

  /** One specialist at one location in `zone`, a service on a grid, booked from 2027-01-01: the local starts. */
  async function example(
    zone: Zone,
    date: string,
    rules: Omit<Rule, 'location' | 'zone' | 'from' | 'until'>[],
    service: { step: number; duration: number },
    exceptions: Omit<Exception, 'location' | 'zone'>[] = [],
  ): Promise<string[]> {
    const c: Case = {
      zones: [zone],
      specialists: [
        {
          rules: rules.map((r) => ({ ...r, location: 0, zone: null, from: null, until: null })),
          exceptions: exceptions.map((e) => ({ ...e, location: null, zone })),
          claims: [],
        },
      ],
      duration: service.duration,
      bufferBefore: 0,
      bufferAfter: 0,
      step: service.step,
      notice: 0,
      daysAhead: 730,
      serviceAtLocations: true,
      viewer: zone,
      from: date,
      to: date,
      now: Date.parse('2027-01-01T00:00:00Z'),
    };
    const id = await setUp(c);
    const got = await availability(`service_id=${id}&from=${date}&to=${date}&time_zone=${encodeURIComponent(zone)}`, c.now);
    assert.deepEqual(
      got.slots.map((s) => Date.parse(s.start)),
      reference(c).map((s) => s.start),
      'the reference agrees',
    );
    return got.slots.map((s) => s.start_local.slice(11));
  }
  const everyDay = (start: number, end: number) => [1, 2, 3, 4, 5, 6, 7].map((weekday) => ({ weekday, start, end }));

  it('a rule 09:00-12:00 stays 09:00 local on the days around each change (the offset moves, the wall time does not)', async () => {
    const hourly = { step: 60, duration: 60 };
    const cases: [Zone, string, string, string][] = [
      ['Europe/Bucharest', '2027-03-27', '2027-03-29', '+02:00|+03:00'],
      ['Europe/Bucharest', '2027-10-30', '2027-11-01', '+03:00|+02:00'],
      ['America/New_York', '2027-03-13', '2027-03-15', '-05:00|-04:00'],
      ['America/New_York', '2027-11-06', '2027-11-08', '-04:00|-05:00'],
      ['Australia/Lord_Howe', '2027-04-03', '2027-04-05', '+11:00|+10:30'],
      ['Australia/Lord_Howe', '2027-10-02', '2027-10-04', '+10:30|+11:00'],
      ['Asia/Kolkata', '2027-03-27', '2027-03-29', '+05:30|+05:30'],
    ];
    for (const [zone, before, after, offsets] of cases) {
      const [was, is] = offsets.split('|');
      assert.deepEqual(
        await example(zone, before, everyDay(540, 720), hourly),
        [`09:00:00${was}`, `10:00:00${was}`, `11:00:00${was}`],
        zone,
      );
      assert.deepEqual(await example(zone, after, everyDay(540, 720), hourly), [`09:00:00${is}`, `10:00:00${is}`, `11:00:00${is}`], zone);
    }
  });

  it('a rule across the change: the grid keeps elapsed time, skipped times begin at the change, a repeated hour is open twice', async () => {
    // Bucharest, 28 March 2027: 03:00 becomes 04:00. 02:00-05:00 hourly: 02:00, then an hour later it is 04:00.
    assert.deepEqual(await example('Europe/Bucharest', '2027-03-28', everyDay(120, 300), { step: 60, duration: 60 }), [
      '02:00:00+02:00',
      '04:00:00+03:00',
    ]);
    // A rule that starts in the skipped hour begins at the change (it used to end before it began: a 500).
    assert.deepEqual(await example('Europe/Bucharest', '2027-03-28', everyDay(210, 255), { step: 15, duration: 15 }), ['04:00:00+03:00']);
    // Lord Howe, 3 October 2027: 02:00 becomes 02:30. Half-hourly 01:00-04:00 loses only 02:00; hourly keeps
    // an hour of elapsed time between starts (01:00, 02:30, 03:30).
    assert.deepEqual(await example('Australia/Lord_Howe', '2027-10-03', everyDay(60, 240), { step: 30, duration: 30 }), [
      '01:00:00+10:30',
      '01:30:00+10:30',
      '02:30:00+11:00',
      '03:00:00+11:00',
      '03:30:00+11:00',
    ]);
    assert.deepEqual(await example('Australia/Lord_Howe', '2027-10-03', everyDay(60, 240), { step: 60, duration: 30 }), [
      '01:00:00+10:30',
      '02:30:00+11:00',
      '03:30:00+11:00',
    ]);
    // A window that opens just before the change: its first start is the first minute on the grid in
    // local time (03:00 after the jump from 01:59 in New York), not 20 minutes of elapsed time later.
    assert.deepEqual(await example('America/New_York', '2027-03-14', everyDay(100, 300), { step: 45, duration: 45 }), [
      '03:00:00-04:00',
      '03:45:00-04:00',
    ]);
    // New York, 7 November 2027: 02:00 EDT becomes 01:00 EST. 01:00-03:00 is three hours: 01:00 EDT,
    // 01:00 EST and 02:00 EST; time off 01:00-02:00 takes both of its hours.
    assert.deepEqual(await example('America/New_York', '2027-11-07', everyDay(60, 180), { step: 60, duration: 60 }), [
      '01:00:00-04:00',
      '01:00:00-05:00',
      '02:00:00-05:00',
    ]);
    assert.deepEqual(
      await example('America/New_York', '2027-11-07', everyDay(60, 180), { step: 60, duration: 60 }, [
        { kind: 'time_off', date: '2027-11-07', start: 60, end: 120 },
      ]),
      ['02:00:00-05:00'],
    );
  });

  it('a window longer than a day: the grid starts again at each local midnight, so a day shows the same slots whatever the range, and each can be held', async () => {
    // Around the clock at Kolkata, a 50-minute grid (1440 is not a multiple of 50).
    const c: Case = {
      zones: ['Asia/Kolkata'],
      specialists: [
        { rules: everyDay(0, 1440).map((r) => ({ ...r, location: 0, zone: null, from: null, until: null })), exceptions: [], claims: [] },
      ],
      duration: 50,
      bufferBefore: 0,
      bufferAfter: 0,
      step: 50,
      notice: 0,
      daysAhead: 730,
      serviceAtLocations: true,
      viewer: 'Asia/Kolkata',
      from: '2027-03-01',
      to: '2027-03-03',
      now: Date.parse('2027-01-01T00:00:00Z'),
    };
    const service = await setUp(c);
    const q = (from: string, to: string) => `service_id=${service}&from=${from}&to=${to}&time_zone=Asia/Kolkata`;
    const third = (await availability(q('2027-03-01', '2027-03-03'), c.now)).slots.filter((s) => s.start_local.startsWith('2027-03-03'));
    const alone = (await availability(q('2027-03-03', '2027-03-03'), c.now)).slots;
    assert.deepEqual(
      third.map((s) => s.start_local.slice(11, 16)),
      alone.map((s) => s.start_local.slice(11, 16)),
    );
    assert.deepEqual(
      alone.slice(0, 3).map((s) => s.start_local.slice(11, 16)),
      ['00:00', '00:50', '01:40'],
    );
    mock.timers.enable({ apis: ['Date'], now: c.now });
    try {
      for (const slot of [third[5]!, third.at(-1)!]) {
        const res = await t.app.inject({
          method: 'POST',
          url: '/v1/public/holds',
          payload: { organization: org.id, service_id: service, specialist_id: pool[0]!.id, start: slot.start },
          remoteAddress: '198.51.100.9',
        });
        assert.equal(res.statusCode, 201, `${slot.start_local}: ${res.body}`);
      }
    } finally {
      mock.timers.reset();
    }
  });

  it('a day-long service at the end of the range fits a window that runs past the days the range names', async () => {
    // Lord Howe around the clock, 24-hour slots on the hour, seen from Bucharest: the last start of 1 March
    // there (23:00, 21:00 UTC) ends on 2 March at 21:00 UTC, 08:00 on 3 March at Lord Howe.
    const c: Case = {
      zones: ['Australia/Lord_Howe'],
      specialists: [
        { rules: everyDay(0, 1440).map((r) => ({ ...r, location: 0, zone: null, from: null, until: null })), exceptions: [], claims: [] },
      ],
      duration: 1440,
      bufferBefore: 0,
      bufferAfter: 0,
      step: 60,
      notice: 0,
      daysAhead: 730,
      serviceAtLocations: true,
      viewer: 'Europe/Bucharest',
      from: '2027-03-01',
      to: '2027-03-01',
      now: Date.parse('2027-01-01T00:00:00Z'),
    };
    const service = await setUp(c);
    const got = await availability(`service_id=${service}&from=2027-03-01&to=2027-03-01&time_zone=Europe/Bucharest`, c.now);
    assert.equal(got.slots.at(-1)?.start_local, '2027-03-01T23:00:00+02:00');
    assert.equal(got.slots.length, 24);
    assert.deepEqual(
      got.slots.map((s) => Date.parse(s.start)),
      reference(c).map((s) => s.start),
    );
  });

  it('matches the reference on random rules, exceptions, bookings and grids across daylight-saving changes', async () => {
    const runs = Number(process.env.PROPERTY_RUNS ?? 40);
    const seed = Number(process.env.PROPERTY_SEED ?? 20_270_328);
    await fc.assert(
      fc.asyncProperty(caseArb(), async (c) => {
        const service = await setUp(c);
        const got = await availability(`service_id=${service}&from=${c.from}&to=${c.to}&time_zone=${encodeURIComponent(c.viewer)}`, c.now);
        const specIndex = new Map(pool.map((p, i) => [p.id, i]));
        const locIndex = new Map(c.zones.map((z, i) => [locations[z]!, i]));
        const show = (s: Slot) =>
          `${new Date(s.start).toISOString()} (${new Date(label(s.start, c.zones[s.location]!)).toISOString().slice(0, 16)} ${c.zones[s.location]}) spec ${s.specialist}`;
        const actual = got.slots.map((s) => {
          assert.equal(Date.parse(s.end) - Date.parse(s.start), c.duration * MIN);
          return show({
            start: Date.parse(s.start),
            specialist: specIndex.get(s.specialist_id)!,
            location: locIndex.get(s.location_id) ?? -1,
          });
        });
        const expected = reference(c).map(show);
        const missing = expected.filter((x) => !actual.includes(x));
        const extra = actual.filter((x) => !expected.includes(x));
        if (missing.length || extra.length)
          throw new Error(
            `${expected.length} expected, ${actual.length} from the API\nmissing from the API:\n  ${missing.slice(0, 12).join('\n  ')}\nextra in the API:\n  ${extra.slice(0, 12).join('\n  ')}`,
          );
        assert.equal(actual.length, expected.length);
      }),
      { numRuns: runs, seed, endOnFailure: process.env.PROPERTY_SHRINK !== '1', includeErrorInReport: true },
    );
  });
});
