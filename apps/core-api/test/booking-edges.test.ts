import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { assertError, dataOf, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

/*
 * Edges of booking that the permission matrix and the fuzzer found: who may book on whose
 * calendar, changes by outsiders, a specialist who erases its account while it has availability and
 * appointments (migration 0073), and instants at the ends of what dates can hold on the public routes.
 */

const hex = () => randomBytes(4).toString('hex');

describe('booking edges', () => {
  let t: TestApp;
  let org: { id: string; slug: string };
  let admin: string;
  let support: string;
  let outsider: string;
  let location: string;
  let service: string;
  let patientId: string;
  let patientToken: string;
  /** Free slot starts nobody has taken yet (two days from now on, every half hour 08:00-20:00 UTC). */
  let free: string[];

  const addSpecialist = async (name: string) => {
    const member = await t.addMember(org.id, uniqueEmail('edge-spec'), 'specialist');
    const id = dataOf(
      await t.call('POST', '/v1/specialists', {
        token: admin,
        org: org.id,
        body: { user_id: member.userId, display_name: name, bookable_online: true, location_ids: [location] },
      }),
      201,
    ).id as string;
    dataOf(
      await t.call('PUT', `/v1/specialists/${id}/availability`, {
        token: admin,
        org: org.id,
        body: { rules: [1, 2, 3, 4, 5, 6, 7].map((weekday) => ({ location_id: location, weekday, start: '08:00', end: '20:00' })) },
      }),
    );
    return { id, token: member.token, userId: member.userId };
  };
  let drA: Awaited<ReturnType<typeof addSpecialist>>;
  let drB: Awaited<ReturnType<typeof addSpecialist>>;

  const book = (token: string, specialistId: string, start: string) =>
    t.call('POST', '/v1/appointments', {
      token,
      org: org.id,
      body: { service_id: service, specialist_id: specialistId, start, patient_id: patientId },
    });
  const next = () => {
    const s = free.shift();
    assert.ok(s, 'out of slots');
    return s;
  };

  before(async () => {
    t = await startTestApp({ env: { RATELIMIT_PUBLIC_LIMIT: '100000', RATELIMIT_HOLDS_PER_IP: '100000' } });
    org = await t.createOrg({ name: 'Edge clinic' });
    await t.publishPrivacyNotice(org.id);
    admin = (await t.addMember(org.id, uniqueEmail('edge-admin'), 'admin')).token;
    support = (await t.addMember(org.id, uniqueEmail('edge-support'), 'customer_support')).token;
    outsider = (await t.addMember((await t.createOrg({ name: 'Elsewhere' })).id, uniqueEmail('edge-out'), 'admin')).token;
    location = dataOf(
      await t.call('POST', `/v1/organizations/${org.id}/locations`, { token: admin, body: { name: 'Edge site', timezone: 'UTC' } }),
      201,
    ).id;
    drA = await addSpecialist('Dr A');
    drB = await addSpecialist('Dr B');
    service = dataOf(
      await t.call('POST', '/v1/services', {
        token: admin,
        org: org.id,
        body: {
          name: `Edge visit ${hex()}`,
          duration_minutes: 30,
          price_minor: 1000,
          currency: 'RON',
          mode: 'in_person',
          is_public: true,
          slot_interval_minutes: 30,
          location_ids: [location],
          specialist_ids: [drA.id, drB.id],
        },
      }),
      201,
    ).id;
    const p = await t.addPatient(org.id, uniqueEmail('edge-patient'));
    await t.acceptOrgPurposes(org.id, p.userId);
    patientToken = p.token;
    patientId = (await t.db.query<{ id: string }>('select id from patients where user_id = $1', [p.userId])).rows[0]!.id;
    const day = new Date(Date.now() + 2 * 86_400_000).toISOString().slice(0, 10);
    const res = await t.call(
      'GET',
      `/v1/public/availability?organization=${org.id}&service_id=${service}&from=${day}&to=${day}&time_zone=UTC`,
    );
    // Both specialists share the grid: one start serves either of them, so keep each start once.
    free = [...new Set((dataOf(res).slots as { start: string }[]).map((s) => s.start))];
    assert.ok(free.length >= 20, `${free.length} slots`);
  });
  after(() => t?.close());

  describe('whose calendar', () => {
    it('a specialist who sees only its own appointments books on its own calendar (201), not on a colleague’s (403)', async () => {
      const own = dataOf(await book(drA.token, drA.id, next()), 201);
      assert.deepEqual([own.specialist_id, own.source], [drA.id, 'staff']);
      const start = next();
      assertError(await book(drA.token, drB.id, start), 403, 'forbidden');
      const { rows } = await t.db.query('select 1 from appointments where organization_id = $1 and starts_at = $2', [org.id, start]);
      assert.equal(rows.length, 0, 'nothing was booked');
      // The front desk sees the clinic's: it books on anyone's calendar.
      assert.equal(dataOf(await book(support, drB.id, start), 201).specialist_id, drB.id);
    });

    it('it moves its own appointment within its calendar, not onto a colleague’s (403); the front desk may', async () => {
      const a = dataOf(await book(drA.token, drA.id, next()), 201);
      const start = next();
      assertError(
        await t.call('PATCH', `/v1/appointments/${a.id}`, { token: drA.token, org: org.id, body: { start, specialist_id: drB.id } }),
        403,
        'forbidden',
      );
      assert.equal(dataOf(await t.call('GET', `/v1/appointments/${a.id}`, { token: drA.token, org: org.id })).status, 'scheduled');
      const moved = dataOf(await t.call('PATCH', `/v1/appointments/${a.id}`, { token: drA.token, org: org.id, body: { start } }));
      assert.deepEqual([moved.specialist_id, moved.rescheduled_from, new Date(moved.starts_at).toISOString()], [drA.id, a.id, start]);
      const byDesk = dataOf(
        await t.call('PATCH', `/v1/appointments/${moved.id}`, {
          token: support,
          org: org.id,
          body: { start: next(), specialist_id: drB.id },
        }),
      );
      assert.equal(byDesk.specialist_id, drB.id);
    });

    it('the patient moves a visit the front desk booked: the new time is the patient’s booking (not a 500 from the insert policy)', async () => {
      const a = dataOf(await book(support, drA.id, next()), 201);
      assert.equal(a.source, 'staff');
      const start = next();
      const moved = dataOf(await t.call('PATCH', `/v1/appointments/${a.id}`, { token: patientToken, org: org.id, body: { start } }));
      assert.deepEqual([moved.rescheduled_from, new Date(moved.starts_at).toISOString()], [a.id, start]);
      const { rows } = await t.db.query<{ source: string; status: string }>(
        'select source, (select status from appointments where id = $2) as status from appointments where id = $1',
        [moved.id, a.id],
      );
      assert.deepEqual(rows[0], { source: 'patient', status: 'rescheduled' });
    });

    it('someone with no appointment rights at the organization is refused before any appointment is looked for (403)', async () => {
      const a = dataOf(await book(support, drA.id, next()), 201);
      for (const id of [a.id, '01900000-0000-7000-8000-000000000000'])
        assertError(
          await t.call('PATCH', `/v1/appointments/${id}`, { token: outsider, org: org.id, body: { status: 'confirmed' } }),
          403,
          'forbidden',
        );
      assert.equal(dataOf(await t.call('GET', `/v1/appointments/${a.id}`, { token: support, org: org.id })).status, 'scheduled');
    });
  });

  describe('a specialist who erases its account', () => {
    it('goes with its availability and calendar; its appointments stay, without a specialist, and can be moved to another', async () => {
      const dr = await addSpecialist('Dr Leaving');
      dataOf(
        await t.call('PATCH', `/v1/services/${service}`, { token: admin, org: org.id, body: { specialist_ids: [drA.id, drB.id, dr.id] } }),
      );
      const a = dataOf(await book(support, dr.id, next()), 201);
      assert.equal(dataOf(await t.call('DELETE', '/v1/me', { token: dr.token }), 204), null);

      const kept = dataOf(await t.call('GET', `/v1/appointments/${a.id}`, { token: support, org: org.id }));
      assert.deepEqual([kept.id, kept.specialist_id, kept.status, kept.patient_id], [a.id, null, 'scheduled', patientId]);
      const { rows } = await t.db.query<{ n: number }>(
        `select (select count(*) from specialists where id = $1)::int + (select count(*) from calendars where specialist_id = $1)::int
              + (select count(*) from availability_rules where specialist_id = $1)::int as n`,
        [dr.id],
      );
      assert.equal(rows[0]!.n, 0, 'profile, calendar and availability are gone');

      // Moving it needs someone to take it: 422 without a specialist, then booked with Dr B.
      const err = assertError(
        await t.call('PATCH', `/v1/appointments/${a.id}`, { token: support, org: org.id, body: { start: next() } }),
        422,
        'validation_failed',
      );
      assert.ok(err.fields.specialist_id, JSON.stringify(err));
      const moved = dataOf(
        await t.call('PATCH', `/v1/appointments/${a.id}`, { token: support, org: org.id, body: { start: next(), specialist_id: drB.id } }),
      );
      assert.deepEqual([moved.specialist_id, moved.rescheduled_from], [drB.id, a.id]);
      // Its status moves as any other's.
      const b = dataOf(await book(support, drA.id, next()), 201);
      assert.equal(
        dataOf(await t.call('PATCH', `/v1/appointments/${b.id}`, { token: support, org: org.id, body: { status: 'confirmed' } })).status,
        'confirmed',
      );
    });

    it('a specialist with availability but no appointments erases its account too (204)', async () => {
      const dr = await addSpecialist('Dr Quiet');
      assert.equal(dataOf(await t.call('DELETE', '/v1/me', { token: dr.token }), 204), null);
      const { rows } = await t.db.query('select 1 from specialists where id = $1', [dr.id]);
      assert.equal(rows.length, 0);
    });

    it('the administrator can still give the specialist role (it holds every appointments code)', async () => {
      const res = await t.call('POST', `/v1/organizations/${org.id}/members`, {
        token: admin,
        body: { email: uniqueEmail('edge-new-spec'), role_code: 'specialist' },
      });
      assert.equal(res.statusCode, 201, res.body);
    });
  });

  describe('the ends of the calendar on the public routes', () => {
    const availability = (query: string) => t.call('GET', `/v1/public/availability?organization=${org.id}&service_id=${service}&${query}`);

    it('dates from 1000-01-02 to 9999-12-30 in any zone; beyond them 422, never 5xx', async () => {
      for (const [query, fields] of [
        ['from=0000-01-01&to=0000-01-01', ['from', 'to']],
        ['from=0999-12-31&to=1000-01-05&time_zone=Pacific/Kiritimati', ['from']],
        ['from=9999-12-31&to=9999-12-31', ['from', 'to']],
        ['from=9999-12-30&to=9999-12-31&time_zone=Pacific/Kiritimati', ['to']],
      ] as const) {
        const err = assertError(await availability(query), 422, 'validation_failed');
        assert.deepEqual(Object.keys(err.fields).sort(), [...fields], query);
      }
      for (const query of [
        'from=1000-01-02&to=1000-01-02&time_zone=Pacific/Kiritimati',
        'from=1000-01-02&to=1000-01-03&time_zone=Pacific/Pago_Pago',
        'from=9999-12-30&to=9999-12-30&time_zone=Pacific/Pago_Pago',
        'from=9999-12-29&to=9999-12-30&time_zone=Pacific/Kiritimati',
      ]) {
        const ok = await availability(query);
        assert.equal(ok.statusCode, 200, `${query}: ${ok.body}`);
        assert.deepEqual(ok.json().data.slots, [], query);
      }
    });

    it('a hold or a booking at an instant no date can hold is 422, never 5xx', async () => {
      for (const start of ['0000-01-01T00:00:00Z', '9999-12-31T23:59:59Z', '0001-01-01T00:00:00Z']) {
        const hold = await t.call('POST', '/v1/public/holds', {
          body: { organization: org.id, service_id: service, specialist_id: drA.id, start },
        });
        assert.ok(hold.statusCode < 500 && hold.statusCode !== 201, `hold ${start}: ${hold.statusCode} ${hold.body}`);
        const booked = await book(support, drA.id, start);
        assert.ok(booked.statusCode < 500 && booked.statusCode !== 201, `booking ${start}: ${booked.statusCode} ${booked.body}`);
      }
    });
  });
});
