import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { assertError, dataOf, MISSING_UUID, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

/*
 * Calendars (spec 4.5 Scheduling; migration 0067): the bookable resources. A specialist's calendar is
 * made with the specialist and goes only with it; rooms and devices sit at a location of the
 * organization, are managed with locations.manage and carry their own weekly availability (rules at
 * their own location only). A calendar with a booking or a live hold ahead is in use. Staff who see or
 * book appointments (or manage locations) read them; patients and other clinics do not.
 */

const hex = () => randomBytes(4).toString('hex');

describe('calendars', () => {
  let t: TestApp;
  let org: { id: string };
  let other: { id: string };
  let admin: { token: string; userId: string };
  let support: string;
  let specialistToken: string;
  let patient: string;
  let otherAdmin: string;
  let superadmin: string;
  let locA: string;
  let locB: string;
  let otherLoc: string;

  const as = (token: string, method: string, url: string, body?: unknown, orgId = org.id, headers: Record<string, string> = {}) =>
    t.call(method, url, { token, org: orgId, headers, ...(body !== undefined ? { body } : {}) });
  const createCalendar = (body: Record<string, unknown>, token = admin.token, orgId = org.id) =>
    as(token, 'POST', '/v1/calendars', body, orgId);
  const room = async (body: Record<string, unknown> = {}, orgId = org.id, token = admin.token) =>
    dataOf(await createCalendar({ kind: 'room', name: `Room ${hex()}`, location_id: locA, ...body }, token, orgId), 201);

  async function auditOf(id: string) {
    const { rows } = await t.db.query<{ action: string; entity_type: string; actor_user_id: string; organization_id: string; data: any }>(
      'select action, entity_type, actor_user_id, organization_id, data from audit_logs where entity_id = $1 order by created_at, id',
      [id],
    );
    return rows;
  }
  async function eventsOf(id: string) {
    const { rows } = await t.db.query<{ type: string; organization_id: string; data: any }>(
      `select type, organization_id, data from domain_events where data->>'id' = $1 order by occurred_at, id`,
      [id],
    );
    return rows;
  }
  const location = async (orgId: string, token: string, timezone: string) =>
    dataOf(await t.call('POST', `/v1/organizations/${orgId}/locations`, { token, body: { name: `Site ${hex()}`, timezone } }), 201)
      .id as string;
  const newSpecialist = async (display_name: string, orgId = org.id, token = admin.token, location_ids = [locA], extra = {}) => {
    const member = await t.addMember(orgId, uniqueEmail('cal-spec'), 'specialist');
    const s = dataOf(
      await t.call('POST', '/v1/specialists', {
        token,
        org: orgId,
        body: { user_id: member.userId, display_name, location_ids, ...extra },
      }),
      201,
    );
    return { id: s.id as string, token: member.token };
  };
  const calendarOf = async (specialistId: string, orgId = org.id, token = admin.token) => {
    const list = dataOf(await as(token, 'GET', `/v1/calendars?kind=specialist&specialist_id=${specialistId}`, undefined, orgId));
    assert.equal(list.length, 1, JSON.stringify(list));
    return list[0];
  };

  before(async () => {
    t = await startTestApp({ env: { RATELIMIT_PUBLIC_LIMIT: '100000', RATELIMIT_HOLDS_PER_IP: '100000' } });
    org = await t.createOrg({ name: 'Calendar clinic' });
    other = await t.createOrg({ name: 'Other clinic' });
    admin = await t.addMember(org.id, uniqueEmail('cal-admin'), 'admin');
    support = (await t.addMember(org.id, uniqueEmail('cal-support'), 'customer_support')).token;
    specialistToken = (await t.addMember(org.id, uniqueEmail('cal-staff'), 'specialist')).token;
    patient = (await t.addPatient(org.id, uniqueEmail('cal-patient'))).token;
    otherAdmin = (await t.addMember(other.id, uniqueEmail('cal-other'), 'admin')).token;
    superadmin = await t.superadmin();
    locA = await location(org.id, admin.token, 'Europe/Bucharest');
    locB = await location(org.id, admin.token, 'America/New_York');
    otherLoc = await location(other.id, otherAdmin, 'Europe/Bucharest');
  });
  after(() => t?.close());

  describe('rooms and devices', () => {
    it('are created with locations.manage at a location of the organization (201), normalised, audited and announced', async () => {
      const res = await createCalendar({
        kind: 'room',
        name: '  Room 1  ',
        description: ' Ground floor ',
        location_id: locA.toUpperCase(),
      });
      const c = dataOf(res, 201);
      assert.deepEqual(
        [c.organization_id, c.kind, c.name, c.description, c.location_id, c.specialist_id, c.feed_enabled],
        [org.id, 'room', 'Room 1', 'Ground floor', locA, null, false],
      );
      const device = dataOf(await createCalendar({ kind: 'device', name: 'Ultrasound', location_id: locB }), 201);
      assert.deepEqual([device.kind, device.description, device.location_id], ['device', null, locB]);

      assert.deepEqual(dataOf(await as(admin.token, 'GET', `/v1/calendars/${c.id}`)), c);
      const audit = await auditOf(c.id);
      assert.deepEqual(
        audit.map((a) => [a.action, a.entity_type, a.actor_user_id, a.organization_id, a.data.kind]),
        [['calendar.created', 'calendar', admin.userId, org.id, 'room']],
      );
      const events = await eventsOf(c.id);
      assert.deepEqual(
        events.map((e) => [e.type, e.organization_id, e.data.kind]),
        [['calendar.created', org.id, 'room']],
      );
    });

    it('need locations.manage to create (403 for the front desk, specialists and patients)', async () => {
      const body = { kind: 'room', name: `Room ${hex()}`, location_id: locA };
      for (const token of [support, specialistToken, patient]) assertError(await createCalendar(body, token), 403, 'forbidden');
      const { rows } = await t.db.query('select 1 from calendars where name = $1', [body.name]);
      assert.equal(rows.length, 0);
    });

    it('refuse a blank name, a specialist kind and a location that is not the organization’s (400 with fields)', async () => {
      assert.deepEqual(
        assertError(await createCalendar({ kind: 'room', name: '   ', location_id: locA }), 400, 'validation_error').fields,
        {
          name: 'must not be blank',
        },
      );
      assert.ok(
        assertError(await createCalendar({ kind: 'specialist', name: 'Me', location_id: locA }), 400, 'validation_error').fields.kind,
      );
      for (const location_id of [otherLoc, MISSING_UUID]) {
        const err = assertError(await createCalendar({ kind: 'room', name: 'Elsewhere', location_id }), 400, 'validation_error');
        assert.ok(err.fields.location_id, JSON.stringify(err));
      }
      assert.ok(assertError(await createCalendar({ kind: 'room', name: 'Nowhere' }), 400, 'validation_error').fields.location_id);
    });

    it('honour Idempotency-Key: a retry answers the first creation, nothing is made twice', async () => {
      const name = `Room ${hex()}`;
      const headers = { 'idempotency-key': `cal-${hex()}` };
      const first = await as(admin.token, 'POST', '/v1/calendars', { kind: 'room', name, location_id: locA }, org.id, headers);
      const again = await as(admin.token, 'POST', '/v1/calendars', { kind: 'room', name, location_id: locA }, org.id, headers);
      assert.equal(dataOf(first, 201).id, dataOf(again, 201).id);
      const { rows } = await t.db.query('select 1 from calendars where organization_id = $1 and name = $2', [org.id, name]);
      assert.equal(rows.length, 1);
    });

    it('are read by staff who book or see appointments; patients and outsiders are refused', async () => {
      const c = await room();
      for (const token of [admin.token, support, specialistToken, superadmin])
        assert.equal(dataOf(await as(token, 'GET', `/v1/calendars/${c.id}`)).id, c.id);
      for (const token of [patient, otherAdmin]) assertError(await as(token, 'GET', `/v1/calendars/${c.id}`), 403, 'forbidden');
      for (const token of [patient, otherAdmin]) assertError(await as(token, 'GET', '/v1/calendars'), 403, 'forbidden');
      assertError(await as(admin.token, 'GET', `/v1/calendars/${MISSING_UUID}`), 404, 'not_found');
      assertError(await as(admin.token, 'GET', '/v1/calendars/not-a-uuid'), 404, 'not_found');
    });

    it('PATCH renames and describes them (audited, announced with the changed fields); an unchanged body writes nothing', async () => {
      const c = await room({ description: 'First floor' });
      const renamed = dataOf(await as(admin.token, 'PATCH', `/v1/calendars/${c.id}`, { name: '  Treatment room  ' }));
      assert.deepEqual([renamed.name, renamed.description], ['Treatment room', 'First floor']);
      const cleared = dataOf(await as(admin.token, 'PATCH', `/v1/calendars/${c.id}`, { description: null }));
      assert.deepEqual([cleared.name, cleared.description], ['Treatment room', null]);
      const same = dataOf(await as(admin.token, 'PATCH', `/v1/calendars/${c.id}`, { name: 'Treatment room', description: '  ' }));
      assert.equal(same.updated_at, cleared.updated_at, 'nothing changed, nothing written');

      assert.deepEqual(
        (await auditOf(c.id)).map((a) => [a.action, a.data.fields ?? null]),
        [
          ['calendar.created', null],
          ['calendar.updated', ['name']],
          ['calendar.updated', ['description']],
        ],
      );
      assert.deepEqual(
        (await eventsOf(c.id)).map((e) => [e.type, e.data.changed ?? null]),
        [
          ['calendar.created', null],
          ['calendar.updated', ['name']],
          ['calendar.updated', ['description']],
        ],
      );
      assert.deepEqual(
        assertError(await as(admin.token, 'PATCH', `/v1/calendars/${c.id}`, { name: ' ' }), 400, 'validation_error').fields,
        {
          name: 'must not be blank',
        },
      );
      for (const token of [support, specialistToken, patient])
        assertError(await as(token, 'PATCH', `/v1/calendars/${c.id}`, { name: 'Mine now' }), 403, 'forbidden');
      assertError(await as(admin.token, 'PATCH', `/v1/calendars/${MISSING_UUID}`, { name: 'Ghost' }), 404, 'not_found');
      assert.equal(dataOf(await as(admin.token, 'GET', `/v1/calendars/${c.id}`)).name, 'Treatment room');
    });

    it('DELETE removes one with nothing ahead (204, audited, announced); only with locations.manage', async () => {
      const c = await room();
      for (const token of [support, specialistToken, patient])
        assertError(await as(token, 'DELETE', `/v1/calendars/${c.id}`), 403, 'forbidden');
      assert.equal(dataOf(await as(admin.token, 'DELETE', `/v1/calendars/${c.id}`), 204), null);
      assertError(await as(admin.token, 'GET', `/v1/calendars/${c.id}`), 404, 'not_found');
      assertError(await as(admin.token, 'DELETE', `/v1/calendars/${c.id}`), 404, 'not_found');
      assert.deepEqual(
        (await auditOf(c.id)).map((a) => [a.action, a.data.kind ?? null]),
        [
          ['calendar.created', 'room'],
          ['calendar.deleted', 'room'],
        ],
      );
      assert.deepEqual(
        (await eventsOf(c.id)).map((e) => e.type),
        ['calendar.created', 'calendar.deleted'],
      );
    });

    it('keep their location in use: deleting the location is 409 location_in_use until the room goes', async () => {
      const site = await location(org.id, admin.token, 'Europe/Bucharest');
      const c = await room({ location_id: site });
      assertError(await t.call('DELETE', `/v1/organizations/${org.id}/locations/${site}`, { token: admin.token }), 409, 'location_in_use');
      dataOf(await as(admin.token, 'DELETE', `/v1/calendars/${c.id}`), 204);
      dataOf(await t.call('DELETE', `/v1/organizations/${org.id}/locations/${site}`, { token: admin.token }), 204);
    });
  });

  describe("a specialist's calendar", () => {
    it('is made with the specialist, named after it, at no one location', async () => {
      const s = await newSpecialist('  Dr Calendar ');
      const c = await calendarOf(s.id);
      assert.deepEqual(
        [c.kind, c.name, c.specialist_id, c.location_id, c.description, c.organization_id],
        ['specialist', 'Dr Calendar', s.id, null, null, org.id],
      );
      assert.deepEqual(dataOf(await as(admin.token, 'GET', `/v1/calendars/${c.id}`)), c);
    });

    it('goes only with the specialist: DELETE and its availability routes are 409 specialist_calendar', async () => {
      const s = await newSpecialist('Dr Stays');
      const c = await calendarOf(s.id);
      assertError(await as(admin.token, 'DELETE', `/v1/calendars/${c.id}`), 409, 'specialist_calendar');
      assertError(await as(admin.token, 'GET', `/v1/calendars/${c.id}/availability`), 409, 'specialist_calendar');
      assertError(
        await as(admin.token, 'GET', `/v1/calendars/${c.id}/availability?from=2026-12-07&to=2026-12-08`),
        409,
        'specialist_calendar',
      );
      assertError(
        await as(admin.token, 'PUT', `/v1/calendars/${c.id}/availability`, {
          rules: [{ location_id: locA, weekday: 1, start: '09:00', end: '12:00' }],
        }),
        409,
        'specialist_calendar',
      );
      assert.equal(dataOf(await as(admin.token, 'GET', `/v1/calendars/${c.id}`)).id, c.id);
      const { rows } = await t.db.query('select 1 from availability_rules where calendar_id = $1', [c.id]);
      assert.equal(rows.length, 0, 'nothing was written to the specialist calendar');
      assert.deepEqual(
        (await auditOf(c.id)).map((a) => a.action),
        [],
      );
    });
  });

  describe('availability of a room or device', () => {
    const rules = () => [
      { location_id: locA, weekday: 1, start: '09:00', end: '12:00' },
      { location_id: locA, weekday: 3, start: '14:00', end: '18:00' },
    ];
    const windows = async (id: string, from: string, to: string, token = admin.token) =>
      (
        dataOf(await as(token, 'GET', `/v1/calendars/${id}/availability?from=${from}&to=${to}`)).windows as {
          location_id: string;
          start: string;
          end: string;
        }[]
      ).map((w) => [w.location_id, new Date(w.start).toISOString(), new Date(w.end).toISOString()]);

    it("PUT replaces the rules and exceptions at the calendar's own location (zone from the location), audited and announced", async () => {
      const c = await room();
      const put = dataOf(
        await as(admin.token, 'PUT', `/v1/calendars/${c.id}/availability`, {
          rules: rules(),
          exceptions: [{ kind: 'time_off', date: '2026-12-07', location_id: locA, note: ' Cleaning ' }],
        }),
      );
      assert.equal(put.calendar_id, c.id);
      assert.deepEqual(
        put.rules.map((r: Record<string, unknown>) => [r.location_id, r.weekday, r.start, r.end, r.time_zone]),
        [
          [locA, 1, '09:00', '12:00', 'Europe/Bucharest'],
          [locA, 3, '14:00', '18:00', 'Europe/Bucharest'],
        ],
      );
      assert.deepEqual(
        put.exceptions.map((e: Record<string, unknown>) => [e.kind, e.date, e.location_id, e.start, e.end, e.note]),
        [['time_off', '2026-12-07', locA, null, null, 'Cleaning']],
      );
      assert.equal(put.windows, undefined);
      assert.deepEqual(dataOf(await as(admin.token, 'GET', `/v1/calendars/${c.id}/availability`)), put);

      const audit = (await auditOf(c.id)).filter((a) => a.action === 'calendar.availability_updated');
      assert.deepEqual(
        audit.map((a) => [a.data.rules, a.data.exceptions]),
        [[2, 1]],
      );
      assert.deepEqual(
        (await eventsOf(c.id)).filter((e) => e.type === 'calendar.updated').map((e) => e.data.changed),
        [['availability']],
      );

      // The whole availability is replaced: an empty body clears it.
      const cleared = dataOf(await as(admin.token, 'PUT', `/v1/calendars/${c.id}/availability`, { rules: [] }));
      assert.deepEqual([cleared.rules, cleared.exceptions], [[], []]);
    });

    it("a rule or exception at another of the organization's locations is 422, another organization's is 400; nothing changes", async () => {
      const c = await room();
      dataOf(await as(admin.token, 'PUT', `/v1/calendars/${c.id}/availability`, { rules: rules() }));
      const elsewhere = await as(admin.token, 'PUT', `/v1/calendars/${c.id}/availability`, {
        rules: [{ location_id: locB, weekday: 2, start: '09:00', end: '10:00' }],
        exceptions: [{ kind: 'extra_hours', date: '2026-12-08', location_id: locB, start: '08:00', end: '09:00' }],
      });
      const fields = assertError(elsewhere, 422, 'validation_failed').fields;
      assert.deepEqual(Object.keys(fields).sort(), ['exceptions[0].location_id', 'rules[0].location_id']);
      assert.match(fields['rules[0].location_id'], /not this calendar's location/);
      const foreign = await as(admin.token, 'PUT', `/v1/calendars/${c.id}/availability`, {
        rules: rules(),
        exceptions: [{ kind: 'extra_hours', date: '2026-12-08', location_id: otherLoc, start: '08:00', end: '09:00' }],
      });
      assert.deepEqual(Object.keys(assertError(foreign, 400, 'validation_error').fields), ['exceptions.0.location_id']);
      const overlapping = await as(admin.token, 'PUT', `/v1/calendars/${c.id}/availability`, {
        rules: [
          { location_id: locA, weekday: 2, start: '09:00', end: '12:00' },
          { location_id: locA, weekday: 2, start: '11:00', end: '13:00' },
        ],
      });
      assert.ok(assertError(overlapping, 422, 'validation_failed').fields['rules[1]']);
      const now = dataOf(await as(admin.token, 'GET', `/v1/calendars/${c.id}/availability`));
      assert.deepEqual(
        now.rules.map((r: { weekday: number }) => r.weekday),
        [1, 3],
      );
    });

    it('GET with from and to gives the open windows as instants, in the location’s zone, minus time off', async () => {
      const c = await room();
      dataOf(
        await as(admin.token, 'PUT', `/v1/calendars/${c.id}/availability`, {
          rules: rules(),
          exceptions: [
            { kind: 'time_off', date: '2026-12-07', time_zone: 'Europe/Bucharest' },
            { kind: 'time_off', date: '2026-12-09', start: '15:00', end: '16:00', location_id: locA },
            { kind: 'extra_hours', date: '2026-12-05', location_id: locA, start: '10:00', end: '11:00' },
          ],
        }),
      );
      // Bucharest is UTC+2 in winter: 09:00 local is 07:00Z. Monday 7 December is off; Wednesday 9 December
      // loses 15:00-16:00; Saturday 5 December has extra hours.
      assert.deepEqual(await windows(c.id, '2026-11-30', '2026-12-09'), [
        [locA, '2026-11-30T07:00:00.000Z', '2026-11-30T10:00:00.000Z'],
        [locA, '2026-12-02T12:00:00.000Z', '2026-12-02T16:00:00.000Z'],
        [locA, '2026-12-05T08:00:00.000Z', '2026-12-05T09:00:00.000Z'],
        [locA, '2026-12-09T12:00:00.000Z', '2026-12-09T13:00:00.000Z'],
        [locA, '2026-12-09T14:00:00.000Z', '2026-12-09T16:00:00.000Z'],
      ]);
      // UTC+3 in summer: the same wall-clock hours are an hour earlier in UTC.
      assert.deepEqual(await windows(c.id, '2026-07-06', '2026-07-06'), [[locA, '2026-07-06T06:00:00.000Z', '2026-07-06T09:00:00.000Z']]);
      // Staff who book read them too (appointments.create); a patient does not.
      assert.equal((await windows(c.id, '2026-11-30', '2026-11-30', specialistToken)).length, 1);
      assert.equal((await windows(c.id, '2026-11-30', '2026-11-30', support)).length, 1);
      assertError(await as(patient, 'GET', `/v1/calendars/${c.id}/availability`), 403, 'forbidden');
    });

    it('from and to go together, in order, at most 62 days apart (422 otherwise)', async () => {
      const c = await room();
      const bad = async (query: string, field: string) => {
        const err = assertError(await as(admin.token, 'GET', `/v1/calendars/${c.id}/availability?${query}`), 422, 'validation_failed');
        assert.ok(err.fields[field], `${query}: ${JSON.stringify(err)}`);
      };
      await bad('from=2026-12-01', 'to');
      await bad('to=2026-12-01', 'from');
      await bad('from=2026-12-10&to=2026-12-01', 'to');
      await bad('from=2026-01-01&to=2026-03-04', 'to');
      assert.ok(
        Array.isArray(dataOf(await as(admin.token, 'GET', `/v1/calendars/${c.id}/availability?from=2026-01-01&to=2026-03-03`)).windows),
      );
      // A date the database cannot hold is the caller's error, never the server's.
      for (const query of ['from=0000-01-01&to=0000-01-02', 'from=2026-02-30&to=2026-03-01']) {
        const res = await as(admin.token, 'GET', `/v1/calendars/${c.id}/availability?${query}`);
        assert.ok(res.statusCode < 500, `${query}: ${res.statusCode} ${res.body}`);
      }
    });

    it('is written only with locations.manage', async () => {
      const c = await room();
      for (const token of [support, specialistToken, patient])
        assertError(await as(token, 'PUT', `/v1/calendars/${c.id}/availability`, { rules: rules() }), 403, 'forbidden');
      assertError(await as(admin.token, 'PUT', `/v1/calendars/${MISSING_UUID}/availability`, { rules: [] }), 404, 'not_found');
    });
  });

  describe('in use', () => {
    let appointmentId: string;
    let hold: { id: string };

    before(async () => {
      // One booked appointment and one hold (on a specialist's calendar), whose ids the claims below carry.
      const s = await newSpecialist('Dr Booked', org.id, admin.token, [locA], { bookable_online: true });
      dataOf(
        await as(admin.token, 'PUT', `/v1/specialists/${s.id}/availability`, {
          rules: [1, 2, 3, 4, 5, 6, 7].map((weekday) => ({ location_id: locA, weekday, start: '08:00', end: '20:00' })),
        }),
      );
      const service = dataOf(
        await as(admin.token, 'POST', '/v1/services', {
          name: `Visit ${hex()}`,
          duration_minutes: 30,
          price_minor: 1000,
          currency: 'RON',
          mode: 'in_person',
          is_public: true,
          slot_interval_minutes: 30,
          location_ids: [locA],
          specialist_ids: [s.id],
        }),
        201,
      ).id;
      const p = await t.addPatient(org.id, uniqueEmail('cal-booked'));
      const patientId = (await t.db.query<{ id: string }>('select id from patients where user_id = $1', [p.userId])).rows[0]!.id;
      const day = new Date(Date.now() + 3 * 86_400_000).toISOString().slice(0, 10);
      const slots = dataOf(
        await t.call('GET', `/v1/public/availability?organization=${org.id}&service_id=${service}&from=${day}&to=${day}`),
      ).slots as { start: string }[];
      appointmentId = dataOf(
        await as(support, 'POST', '/v1/appointments', {
          service_id: service,
          specialist_id: s.id,
          start: slots[0]!.start,
          patient_id: patientId,
        }),
        201,
      ).id;
      hold = dataOf(
        await t.call('POST', '/v1/public/holds', {
          body: { organization: org.id, service_id: service, specialist_id: s.id, start: slots[4]!.start },
        }),
        201,
      );
    });

    /** A claim on the calendar from `startMin` to `endMin` minutes from now (the database's now). */
    const claim = async (
      calendarId: string,
      startMin: number,
      endMin: number,
      owner: { appointment?: string; hold?: string; expiresMin?: number },
    ) => {
      const { rows } = await t.db.query<{ id: string }>(
        `insert into calendar_claims (organization_id, calendar_id, during, appointment_id, hold_id, expires_at)
         values ($1, $2, tstzrange(now() + make_interval(mins => $3), now() + make_interval(mins => $4)), $5, $6,
                 case when $7::int is null then null else now() + make_interval(mins => $7::int) end)
         returning id`,
        [org.id, calendarId, startMin, endMin, owner.appointment ?? null, owner.hold ?? null, owner.expiresMin ?? null],
      );
      return rows[0]!.id;
    };

    it('an appointment ahead makes it 409 calendar_in_use; once its claim is released the calendar goes', async () => {
      const c = await room();
      const claimId = await claim(c.id, 24 * 60, 24 * 60 + 30, { appointment: appointmentId });
      assertError(await as(admin.token, 'DELETE', `/v1/calendars/${c.id}`), 409, 'calendar_in_use');
      assert.equal(dataOf(await as(admin.token, 'GET', `/v1/calendars/${c.id}`)).id, c.id);
      assert.deepEqual(
        (await auditOf(c.id)).map((a) => a.action),
        ['calendar.created'],
      );
      await t.db.query('update calendar_claims set active = false where id = $1', [claimId]);
      dataOf(await as(admin.token, 'DELETE', `/v1/calendars/${c.id}`), 204);
    });

    it('an appointment under way is in use too; one that has ended is not', async () => {
      const ongoing = await room();
      await claim(ongoing.id, -10, 20, { appointment: appointmentId });
      assertError(await as(admin.token, 'DELETE', `/v1/calendars/${ongoing.id}`), 409, 'calendar_in_use');
      const past = await room();
      await claim(past.id, -3 * 24 * 60, -3 * 24 * 60 + 30, { appointment: appointmentId });
      dataOf(await as(admin.token, 'DELETE', `/v1/calendars/${past.id}`), 204);
    });

    it('a live hold ahead is in use; an expired one (not yet swept) is not', async () => {
      const live = await room();
      await claim(live.id, 60, 90, { hold: hold.id, expiresMin: 10 });
      assertError(await as(admin.token, 'DELETE', `/v1/calendars/${live.id}`), 409, 'calendar_in_use');
      const expired = await room();
      await claim(expired.id, 60, 90, { hold: hold.id, expiresMin: -1 });
      dataOf(await as(admin.token, 'DELETE', `/v1/calendars/${expired.id}`), 204);
    });
  });

  describe('list', () => {
    let o: { id: string };
    let adminO: string;
    let a: string;
    let b: string;
    let ids: Record<string, string>;
    let created: Record<string, string>;

    before(async () => {
      // An organization of its own, so that the list holds exactly these four.
      o = await t.createOrg({ name: 'Listing clinic' });
      adminO = (await t.addMember(o.id, uniqueEmail('list-admin'), 'admin')).token;
      a = await location(o.id, adminO, 'Europe/Bucharest');
      b = await location(o.id, adminO, 'Europe/Bucharest');
      ids = {};
      ids['b room'] = (await room({ name: 'b room', location_id: a }, o.id, adminO)).id;
      ids['A room'] = (await room({ name: 'A room', location_id: b }, o.id, adminO)).id;
      ids['c device'] = dataOf(await createCalendar({ kind: 'device', name: 'c device', location_id: a }, adminO, o.id), 201).id;
      const s = await newSpecialist('Dr Z', o.id, adminO, [a]);
      ids['Dr Z'] = (await calendarOf(s.id, o.id, adminO)).id;
      ids.specialist = s.id;
      // The creation instants to the microsecond, as the bounds compare them.
      const { rows } = await t.db.query<{ name: string; at: string }>(
        `select name, to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as at from calendars where organization_id = $1`,
        [o.id],
      );
      created = Object.fromEntries(rows.map((r) => [r.name, r.at]));
    });

    const names = async (query: string) => {
      const res = await t.call('GET', `/v1/calendars${query ? `?${query}` : ''}`, { token: adminO, org: o.id });
      assert.equal(res.statusCode, 200, res.body);
      return (res.json().data as { name: string }[]).map((c) => c.name);
    };

    it('filters by kind, location and specialist', async () => {
      assert.deepEqual(await names('kind=room&sort=name'), ['A room', 'b room']);
      assert.deepEqual(await names('kind=device'), ['c device']);
      assert.deepEqual(await names('kind=specialist'), ['Dr Z']);
      assert.deepEqual(await names(`location_id=${a}&sort=name`), ['b room', 'c device']);
      assert.deepEqual(await names(`specialist_id=${ids.specialist}`), ['Dr Z']);
      assert.deepEqual(await names(`kind=room&location_id=${a}`), ['b room']);
      assert.deepEqual(await names(`location_id=${locA}`), [], "another organization's location names none of these");
    });

    it('filters by creation time (inclusive bounds)', async () => {
      assert.deepEqual(await names(`created_at_after=${created['c device']}&sort=name`), ['c device', 'Dr Z']);
      assert.deepEqual(await names(`created_at_before=${created['A room']}&sort=name`), ['A room', 'b room']);
      assert.deepEqual(await names(`created_at_after=${created['A room']}&created_at_before=${created['c device']}&sort=name`), [
        'A room',
        'c device',
      ]);
      assertError(await t.call('GET', '/v1/calendars?created_at_after=yesterday', { token: adminO, org: o.id }), 422, 'validation_failed');
    });

    it('sorts by name (case-insensitive), kind and creation; newest first by default; pages with a total', async () => {
      assert.deepEqual(await names(''), ['Dr Z', 'c device', 'A room', 'b room']);
      assert.deepEqual(await names('sort=name'), ['A room', 'b room', 'c device', 'Dr Z']);
      assert.deepEqual(await names('sort=-name'), ['Dr Z', 'c device', 'b room', 'A room']);
      assert.deepEqual(await names('sort=kind,name'), ['c device', 'A room', 'b room', 'Dr Z']);
      assert.deepEqual(await names('sort=created_at'), ['b room', 'A room', 'c device', 'Dr Z']);
      const page = await t.call('GET', '/v1/calendars?sort=name&limit=3&page=2', { token: adminO, org: o.id });
      assert.deepEqual(
        page.json().data.map((c: { name: string }) => c.name),
        ['Dr Z'],
      );
      assert.equal(page.json().pagination.total, 4);
      assertError(await t.call('GET', '/v1/calendars?sort=secret', { token: adminO, org: o.id }), 422, 'validation_failed');
    });
  });

  describe('another organization', () => {
    it("never reaches this organization's calendars: 404 in its own scope, 403 in this one", async () => {
      const c = await room();
      const paths: [string, string, unknown?][] = [
        ['GET', `/v1/calendars/${c.id}`],
        ['PATCH', `/v1/calendars/${c.id}`, { name: 'Taken' }],
        ['DELETE', `/v1/calendars/${c.id}`],
        ['GET', `/v1/calendars/${c.id}/availability`],
        ['PUT', `/v1/calendars/${c.id}/availability`, { rules: [{ location_id: otherLoc, weekday: 1, start: '09:00', end: '10:00' }] }],
      ];
      for (const [method, url, body] of paths) {
        assertError(await as(otherAdmin, method, url, body, other.id), 404, 'not_found');
        assertError(await as(otherAdmin, method, url, body, org.id), 403, 'forbidden');
      }
      // A superadmin acting on the other organization does not see it either: every statement names it.
      assertError(await as(superadmin, 'GET', `/v1/calendars/${c.id}`, undefined, other.id), 404, 'not_found');
      const theirs = dataOf(await as(otherAdmin, 'GET', '/v1/calendars?limit=100', undefined, other.id));
      assert.ok(!theirs.some((x: { id: string }) => x.id === c.id));
      assert.deepEqual(
        [dataOf(await as(admin.token, 'GET', `/v1/calendars/${c.id}`)).name, (await auditOf(c.id)).length],
        [c.name, 1],
        'untouched',
      );
    });
  });

  describe('unstorable text', () => {
    it('NUL characters and unpaired surrogates are 400 in a body, nothing is stored', async () => {
      const c = await room();
      for (const name of ['Room\u0000 1', 'Room \ud800', 'x\udfff']) {
        const err = assertError(await createCalendar({ kind: 'room', name, location_id: locA }), 400, 'validation_error');
        assert.ok(err.fields.name, JSON.stringify(err));
        assert.ok(
          assertError(await as(admin.token, 'PATCH', `/v1/calendars/${c.id}`, { description: name }), 400, 'validation_error').fields
            .description,
        );
      }
      assert.equal(dataOf(await as(admin.token, 'GET', `/v1/calendars/${c.id}`)).description, null);
      assertError(await as(admin.token, 'GET', '/v1/calendars?kind=room%00'), 422, 'validation_failed');
      const { rows } = await t.db.query(
        `select 1 from calendars where organization_id = $1 and name like 'Room%' and name <> btrim(name)`,
        [org.id],
      );
      assert.equal(rows.length, 0);
    });
  });
});
