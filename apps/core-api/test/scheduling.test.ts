import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertError, dataOf, startTestApp, uniqueEmail, uniqueSlug, type TestApp } from './helpers.ts';

/*
 * The booking flow (spec 4.5 Scheduling and Appointments): free slots from availability, holds that take
 * a slot for a while, guest bookings that turn a hold into an appointment, the state machine, and no
 * double booking ever: the database's exclusion constraint decides races.
 */

/** The next Monday (UTC date) at least a week ahead, so that minimum notice never cuts its morning. */
function nextMonday(): string {
  const d = new Date(Date.now() + 7 * 86_400_000);
  while (d.getUTCDay() !== 1) d.setUTCDate(d.getUTCDate() + 1);
  return d.toISOString().slice(0, 10);
}

describe('scheduling and appointments', () => {
  let t: TestApp;
  let org: { id: string; slug: string };
  let admin: string;
  let support: string;
  let specialist: { id: string; token: string };
  let location: string;
  let service: string;
  let patientId: string;
  const monday = nextMonday();

  const pub = (method: string, url: string, payload?: unknown, headers: Record<string, string> = {}) =>
    t.app.inject({ method: method as 'GET', url, payload: payload as object, headers, remoteAddress: '198.51.100.50' });
  const slots = async (extra = '') => {
    const res = await pub(
      'GET',
      `/v1/public/availability?organization=${org.slug}&service_id=${service}&from=${monday}&to=${monday}&time_zone=Europe/Bucharest${extra}`,
    );
    assert.equal(res.statusCode, 200, res.body);
    return res.json().data.slots as { start: string; start_local: string; specialist_id: string; location_id: string }[];
  };
  const hold = (start: string) =>
    pub('POST', '/v1/public/holds', { organization: org.id, service_id: service, specialist_id: specialist.id, start });

  before(async () => {
    t = await startTestApp({ env: { RATELIMIT_PUBLIC_LIMIT: '100000', RATELIMIT_HOLDS_PER_IP: '100000' } });
    org = await t.createOrg({ slug: uniqueSlug('sched') });
    await t.publishPrivacyNotice(org.id);
    admin = (await t.addMember(org.id, uniqueEmail('sc-admin'), 'admin')).token;
    support = (await t.addMember(org.id, uniqueEmail('sc-support'), 'customer_support')).token;
    location = dataOf(
      await t.call('POST', `/v1/organizations/${org.id}/locations`, {
        token: admin,
        body: { name: 'Central', timezone: 'Europe/Bucharest' },
      }),
      201,
    ).id;
    const member = await t.addMember(org.id, uniqueEmail('sc-spec'), 'specialist');
    specialist = {
      token: member.token,
      id: dataOf(
        await t.call('POST', '/v1/specialists', {
          token: admin,
          org: org.id,
          body: { user_id: member.userId, display_name: 'Dr Slot', bookable_online: true, location_ids: [location] },
        }),
        201,
      ).id,
    };
    dataOf(
      await t.call('PUT', `/v1/specialists/${specialist.id}/availability`, {
        token: admin,
        org: org.id,
        body: { rules: [1, 2, 3, 4, 5].map((weekday) => ({ location_id: location, weekday, start: '09:00', end: '12:00' })) },
      }),
    );
    service = dataOf(
      await t.call('POST', '/v1/services', {
        token: admin,
        org: org.id,
        body: {
          name: 'Physio session',
          duration_minutes: 30,
          buffer_after_minutes: 10,
          price_minor: 15000,
          currency: 'RON',
          mode: 'in_person',
          is_public: true,
          slot_interval_minutes: 30,
          location_ids: [location],
          specialist_ids: [specialist.id],
        },
      }),
      201,
    ).id;
    const patient = await t.addPatient(org.id, uniqueEmail('sc-patient'));
    await t.acceptOrgPurposes(org.id, patient.userId);
    patientId = (await t.db.query<{ id: string }>('select id from patients where user_id = $1', [patient.userId])).rows[0]!.id;
  });
  after(() => t?.close());

  it('availability: the weekly rule in the location zone, on the grid, each slot with its local time', async () => {
    const got = await slots();
    assert.deepEqual(
      got.map((s) => s.start_local.slice(11, 16)),
      ['09:00', '09:30', '10:00', '10:30', '11:00', '11:30'],
    );
    assert.ok(got.every((s) => s.specialist_id === specialist.id && s.location_id === location));
    assert.match(got[0]!.start_local, /^\d{4}-\d{2}-\d{2}T09:00:00\+0[23]:00$/);
    const bad = await pub(
      'GET',
      `/v1/public/availability?organization=${org.id}&service_id=${service}&from=${monday}&to=2099-01-01&time_zone=Mars/Olympus`,
    );
    assert.equal(bad.statusCode, 422);
    assert.deepEqual(Object.keys(bad.json().error.fields).sort(), ['time_zone', 'to']);
  });

  it('a hold takes its slot (and the buffer after it) until released; holding it twice is 409 slot_unavailable', async () => {
    const [first, second] = await slots();
    const res = await hold(first!.start);
    assert.equal(res.statusCode, 201, res.body);
    const h = res.json().data;
    assert.match(h.secret, /^hold_/);
    assert.equal(h.status, 'live');
    const left = (await slots()).map((s) => s.start);
    assert.ok(!left.includes(first!.start), 'the held slot is gone');
    // 09:30 starts inside 09:00-09:30 + 10 minutes of buffer? No: the buffer is after the held slot, so
    // 09:30 would overlap 09:30-09:40 of it.
    assert.ok(!left.includes(second!.start), 'the buffer after the hold keeps the next slot');
    const again = await hold(first!.start);
    assert.equal(again.statusCode, 409, again.body);
    assert.equal(again.json().error.code, 'slot_unavailable');

    assert.equal((await pub('DELETE', `/v1/public/holds/${h.id}`, undefined, { 'x-hold-secret': 'wrong' })).statusCode, 404);
    const released = await pub('DELETE', `/v1/public/holds/${h.id}`, undefined, { 'x-hold-secret': h.secret });
    assert.equal(released.statusCode, 200, released.body);
    assert.equal(released.json().data.status, 'released');
    assert.ok((await slots()).map((s) => s.start).includes(first!.start), 'the slot is free again');
    assert.equal((await pub('DELETE', `/v1/public/holds/${h.id}`, undefined, { 'x-hold-secret': h.secret })).statusCode, 409);
  });

  it('the booking form names the consents a guest booking needs, with their texts; booking with exactly those is accepted', async () => {
    const res = await pub('GET', `/v1/public/booking-form?organization=${org.slug}&service_id=${service}`);
    assert.equal(res.statusCode, 200, res.body);
    const form = res.json().data;
    assert.deepEqual(
      form.consents.map((c: any) => [c.purpose_code, c.purpose_version, typeof c.texts.en]),
      [['org_privacy_notice', 1, 'string']],
    );
    assert.deepEqual(form.intake, []);
    const [slot] = (await slots()).slice(-2);
    const h = (await hold(slot!.start)).json().data;
    const consents = form.consents.map((c: any) => ({ purpose_code: c.purpose_code, purpose_version: c.purpose_version }));
    const booked = await pub('POST', '/v1/public/bookings', {
      organization: org.slug,
      hold_id: h.id,
      secret: h.secret,
      name: 'Form Guest',
      email: 'form.guest@example.com',
      consents,
    });
    assert.equal(booked.statusCode, 201, booked.body);
    const cancelled = await t.call('PATCH', `/v1/appointments/${booked.json().data.id}`, {
      token: admin,
      org: org.id,
      body: { status: 'cancelled' },
    });
    assert.equal(cancelled.statusCode, 200, cancelled.body);
    assert.equal((await pub('GET', `/v1/public/booking-form?organization=${org.slug}&service_id=${org.id}`)).statusCode, 404);
  });

  it('a guest books a held slot with the required consents (422 without); it stays a guest booking', async () => {
    const [slot] = (await slots()).slice(-1);
    const h = (await hold(slot!.start)).json().data;
    const booking = { organization: org.slug, hold_id: h.id, secret: h.secret, name: 'Ana Guest', email: 'ANA.guest@example.com' };
    const missing = await pub('POST', '/v1/public/bookings', booking);
    assert.equal(missing.statusCode, 422, missing.body);
    assert.match(missing.json().error.fields.consents, /org_privacy_notice version 1/);
    const wrongSecret = await pub('POST', '/v1/public/bookings', { ...booking, secret: 'nope' });
    assert.equal(wrongSecret.statusCode, 404);
    const res = await pub('POST', '/v1/public/bookings', {
      ...booking,
      consents: [{ purpose_code: 'org_privacy_notice', purpose_version: 1 }],
    });
    assert.equal(res.statusCode, 201, res.body);
    const a = res.json().data;
    assert.deepEqual(
      [a.status, a.source, a.patient_id, a.guest_email, a.start ?? a.starts_at],
      ['scheduled', 'guest', null, 'ana.guest@example.com', slot!.start],
    );
    assert.equal('notes' in a, false);
    const events = await t.db.query<{ type: string }>(
      `select type from domain_events where organization_id = $1 and data->>'id' = $2 order by occurred_at, id`,
      [org.id, a.id],
    );
    assert.deepEqual(
      events.rows.map((e) => e.type),
      ['appointment.created', 'appointment.first_booked'],
    );
    assert.equal(
      (await pub('POST', '/v1/public/bookings', { ...booking, consents: [{ purpose_code: 'org_privacy_notice', purpose_version: 1 }] }))
        .statusCode,
      409,
    );
    assert.ok(!(await slots()).map((s) => s.start).includes(slot!.start));
  });

  it('staff book for a patient and move it through the state machine; a move not allowed is 409 invalid_transition', async () => {
    const [slot] = await slots();
    const a = dataOf(
      await t.call('POST', '/v1/appointments', {
        token: support,
        org: org.id,
        body: { service_id: service, specialist_id: specialist.id, start: slot!.start, patient_id: patientId },
      }),
      201,
    );
    assert.equal(a.source, 'staff');
    const move = (status: string) => t.call('PATCH', `/v1/appointments/${a.id}`, { token: support, org: org.id, body: { status } });
    for (const s of ['confirmed', 'checked_in', 'in_progress', 'done']) assert.equal(dataOf(await move(s)).status, s);
    assertError(await move('cancelled'), 409, 'invalid_transition');
    const mine = dataOf(await t.call('GET', '/v1/appointments?status=done', { token: specialist.token, org: org.id }));
    assert.deepEqual(
      mine.map((x: { id: string }) => x.id),
      [a.id],
      'the specialist sees its own',
    );
  });

  it('a patient books for itself within the booking rules, cancels before the window; a video visit needs telemedicine (403)', async () => {
    const patientToken = (
      await t.db.query<{ email: string }>('select u.email from users u join patients p on p.user_id = u.id where p.id = $1', [patientId])
    ).rows[0]!.email;
    const token = await t.token(patientToken);
    const [, slot] = (await slots()).slice(-2);
    const own = await t.call('POST', '/v1/appointments', {
      token,
      org: org.id,
      body: { service_id: service, specialist_id: specialist.id, start: slot!.start },
    });
    assert.equal(own.statusCode, 201, own.body);
    const a = own.json().data;
    assert.deepEqual([a.source, a.patient_id, 'notes' in a], ['patient', patientId, false]);
    assertError(
      await t.call('POST', '/v1/appointments', {
        token,
        org: org.id,
        body: { service_id: service, specialist_id: specialist.id, start: slot!.start },
      }),
      409,
      'slot_unavailable',
    );
    const cancelled = dataOf(
      await t.call('PATCH', `/v1/appointments/${a.id}`, {
        token,
        org: org.id,
        body: { status: 'cancelled', cancellation_reason: 'Feeling better' },
      }),
    );
    assert.equal(cancelled.status, 'cancelled');
    assert.ok((await slots()).map((s) => s.start).includes(slot!.start), 'a cancelled appointment frees its time');
    assertError(
      await t.call('PATCH', `/v1/appointments/${a.id}`, { token, org: org.id, body: { status: 'done' } }),
      409,
      'invalid_transition',
    );

    const video = dataOf(
      await t.call('POST', '/v1/services', {
        token: admin,
        org: org.id,
        body: {
          name: 'Video follow-up',
          duration_minutes: 30,
          price_minor: 9000,
          currency: 'RON',
          mode: 'video',
          is_public: true,
          slot_interval_minutes: 30,
          location_ids: [location],
          specialist_ids: [specialist.id],
        },
      }),
      201,
    ).id;
    const res = await t.call('POST', '/v1/appointments', {
      token,
      org: org.id,
      body: { service_id: video, specialist_id: specialist.id, start: slot!.start },
    });
    assert.equal(res.statusCode, 403, res.body);
    assert.deepEqual([res.json().error.code, res.json().error.missing_purpose], ['consent_required', 'telemedicine']);
  });

  it("a service's intake form: a booking answers its questions (422 with fields otherwise); the answers stay with the visit", async () => {
    const field = (body: object) =>
      t.call('POST', '/v1/custom-fields', { token: admin, org: org.id, body: { entity_type: 'form', ...body } });
    const pain = dataOf(await field({ key: 'pain', label: 'Pain (0-10)', field_type: 'number' }), 201);
    const since = dataOf(await field({ key: 'since', label: 'Since when', field_type: 'text' }), 201);
    const template = dataOf(
      await t.call('POST', '/v1/form-templates', {
        token: admin,
        org: org.id,
        body: { name: 'Intake', fields: [{ custom_field_id: pain.id, required: true }, { custom_field_id: since.id }] },
      }),
      201,
    );
    dataOf(await t.call('PATCH', `/v1/services/${service}`, { token: admin, org: org.id, body: { intake_form_template_id: template.id } }));
    assertError(
      await t.call('PATCH', `/v1/services/${service}`, {
        token: admin,
        org: org.id,
        body: { intake_form_template_id: '01900000-0000-7000-8000-000000000000' },
      }),
      400,
      'validation_error',
    );
    const [slot] = await slots();
    const h = (await hold(slot!.start)).json().data;
    const booking = {
      organization: org.id,
      hold_id: h.id,
      secret: h.secret,
      name: 'Ion Intake',
      email: 'ion.intake@example.com',
      consents: [{ purpose_code: 'org_privacy_notice', purpose_version: 1 }],
    };
    const missing = await pub('POST', '/v1/public/bookings', booking);
    assert.equal(missing.statusCode, 422, missing.body);
    assert.deepEqual(Object.keys(missing.json().error.fields), ['intake.pain']);
    const wrong = await pub('POST', '/v1/public/bookings', { ...booking, intake: { pain: 'a lot', mood: 'bad' } });
    assert.deepEqual(Object.keys(wrong.json().error.fields).sort(), ['intake.mood', 'intake.pain']);
    const res = await pub('POST', '/v1/public/bookings', { ...booking, intake: { pain: 7, since: 'last week' } });
    assert.equal(res.statusCode, 201, res.body);
    const a = res.json().data;
    assert.deepEqual(a.intake_answers, { pain: 7, since: 'last week' });
    assert.deepEqual(
      a.intake_fields.map((f: { key: string; required: boolean }) => [f.key, f.required]),
      [
        ['pain', true],
        ['since', false],
      ],
    );
    assert.equal(a.intake_form_template_id, template.id);
    dataOf(await t.call('PATCH', `/v1/services/${service}`, { token: admin, org: org.id, body: { intake_form_template_id: null } }));
  });

  it('no double booking: 100 concurrent bookings of 10 slots give 10 appointments and 90 answers of 409', async () => {
    // Tuesday to Friday: 24 slots; every other one, so that the buffers do not make neighbours conflict.
    const tuesday = new Date(Date.parse(`${monday}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
    const friday = new Date(Date.parse(`${monday}T00:00:00Z`) + 4 * 86_400_000).toISOString().slice(0, 10);
    const res = await pub(
      'GET',
      `/v1/public/availability?organization=${org.id}&service_id=${service}&from=${tuesday}&to=${friday}&time_zone=Europe/Bucharest`,
    );
    const ten = (res.json().data.slots as { start: string }[])
      .map((s) => s.start)
      .filter((_, i) => i % 2 === 0)
      .slice(0, 10);
    assert.equal(ten.length, 10);
    const answers = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        t.call('POST', '/v1/appointments', {
          token: support,
          org: org.id,
          body: { service_id: service, specialist_id: specialist.id, start: ten[i % 10], patient_id: patientId },
        }),
      ),
    );
    const codes = answers.map((r) => r.statusCode);
    assert.equal(codes.filter((c) => c === 201).length, 10, JSON.stringify(codes));
    assert.equal(codes.filter((c) => c === 409).length, 90);
    assert.ok(answers.filter((r) => r.statusCode === 409).every((r) => r.json().error.code === 'slot_unavailable'));
  });
});
