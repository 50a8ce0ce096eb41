import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { assertError, dataOf, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

/*
 * Availability of a specialist (spec 4.5 Specialists: GET, PUT /v1/specialists/{id}/availability):
 * weekly rules per location in an IANA zone, dated exceptions, an effective range.
 * Local wall-clock times stay right across daylight-saving changes: the windows (?from&to) are checked
 * against instants computed by hand from each zone's published offsets.
 */
describe('specialist availability', () => {
  let t: TestApp;
  let org: string;
  let otherOrg: string;
  let admin: string;
  let otherAdmin: string;
  let support: string;
  let patient: string;
  let selfToken: string;
  let colleagueToken: string;
  let specialist: string;
  let colleague: string;
  let bucharest: string;
  let newYork: string;
  let unlinked: string;

  const hex = () => randomBytes(4).toString('hex');
  const url = (id: string, query = '') => `/v1/specialists/${id}/availability${query ? `?${query}` : ''}`;
  const put = (body: unknown, token = admin, id = specialist) => t.call('PUT', url(id), { token, org, body });
  const get = (query = '', token = admin, id = specialist) => t.call('GET', url(id, query), { token, org });
  const windows = async (from: string, to: string) =>
    (dataOf(await get(`from=${from}&to=${to}`)).windows as { location_id: string; start: string; end: string }[]).map((w) => [
      w.start,
      w.end,
      w.location_id,
    ]);

  async function location(timezone: string): Promise<string> {
    const res = await t.call('POST', `/v1/organizations/${org}/locations`, { token: admin, body: { name: `Room ${hex()}`, timezone } });
    return dataOf(res, 201).id;
  }
  async function newSpecialist(role = 'specialist') {
    const member = await t.addMember(org, uniqueEmail('avail-spec'), role);
    const res = await t.call('POST', '/v1/specialists', {
      token: admin,
      org,
      body: { user_id: member.userId, display_name: `Dr ${hex()}` },
    });
    return { id: dataOf(res, 201).id as string, token: member.token };
  }
  const link = async (id: string, location_ids: string[]) =>
    dataOf(await t.call('PUT', `/v1/specialists/${id}`, { token: admin, org, body: { display_name: `Dr ${hex()}`, location_ids } }));

  before(async () => {
    t = await startTestApp();
    org = (await t.createOrg({ name: 'Availability clinic' })).id;
    otherOrg = (await t.createOrg({ name: 'Other clinic' })).id;
    admin = (await t.addMember(org, uniqueEmail('avail-admin'), 'admin')).token;
    otherAdmin = (await t.addMember(otherOrg, uniqueEmail('avail-other'), 'admin')).token;
    support = (await t.addMember(org, uniqueEmail('avail-support'), 'customer_support')).token;
    patient = (await t.addPatient(org, uniqueEmail('avail-patient'))).token;
    bucharest = await location('Europe/Bucharest');
    newYork = await location('America/New_York');
    unlinked = await location('Asia/Kolkata');
    ({ id: specialist, token: selfToken } = await newSpecialist());
    ({ id: colleague, token: colleagueToken } = await newSpecialist());
    await link(specialist, [bucharest, newYork]);
    await link(colleague, [bucharest]);
  });
  after(() => t?.close());

  it('PUT replaces the whole set; a rule takes its location zone unless it names one; GET returns it in order', async () => {
    const res = await put({
      rules: [
        { location_id: bucharest, weekday: 1, start: '09:00', end: '13:00' },
        { location_id: newYork, weekday: 1, start: '14:00', end: '24:00', time_zone: 'America/New_York', effective_from: '2026-01-01' },
      ],
      exceptions: [{ kind: 'time_off', date: '2026-12-25', time_zone: 'Europe/Bucharest', note: '  Christmas ' }],
    });
    const body = dataOf(res);
    assert.equal(body.specialist_id, specialist);
    assert.deepEqual(
      body.rules.map((r: any) => [r.location_id, r.weekday, r.start, r.end, r.time_zone, r.effective_from, r.effective_until]),
      [
        [bucharest, 1, '09:00', '13:00', 'Europe/Bucharest', null, null],
        [newYork, 1, '14:00', '24:00', 'America/New_York', '2026-01-01', null],
      ],
    );
    assert.deepEqual(
      body.exceptions.map((e: any) => [e.kind, e.date, e.location_id, e.start, e.end, e.note]),
      [['time_off', '2026-12-25', null, null, null, 'Christmas']],
    );
    assert.equal(body.windows, undefined, 'windows only when asked for');
    assert.deepEqual(dataOf(await get()).rules, body.rules);

    // A second PUT replaces everything: what it leaves out is gone.
    const second = dataOf(await put({ rules: [{ location_id: bucharest, weekday: 2, start: '08:00', end: '12:00' }] }));
    assert.deepEqual(
      second.rules.map((r: any) => r.weekday),
      [2],
    );
    assert.deepEqual(second.exceptions, []);
  });

  it('windows keep local wall-clock times across the daylight-saving changes of Bucharest and New York', async () => {
    dataOf(
      await put({
        rules: [
          { location_id: bucharest, weekday: 1, start: '09:00', end: '17:00' },
          { location_id: newYork, weekday: 2, start: '09:00', end: '12:00' },
        ],
      }),
    );
    // Europe/Bucharest leaves summer time on Sunday 2026-10-25 (UTC+3 -> UTC+2); America/New_York on
    // Sunday 2026-11-01 (UTC-4 -> UTC-5).
    assert.deepEqual(await windows('2026-10-19', '2026-11-03'), [
      ['2026-10-19T06:00:00.000Z', '2026-10-19T14:00:00.000Z', bucharest],
      ['2026-10-20T13:00:00.000Z', '2026-10-20T16:00:00.000Z', newYork],
      ['2026-10-26T07:00:00.000Z', '2026-10-26T15:00:00.000Z', bucharest],
      ['2026-10-27T13:00:00.000Z', '2026-10-27T16:00:00.000Z', newYork],
      ['2026-11-02T07:00:00.000Z', '2026-11-02T15:00:00.000Z', bucharest],
      ['2026-11-03T14:00:00.000Z', '2026-11-03T17:00:00.000Z', newYork],
    ]);
  });

  it('Lord Howe shifts by 30 minutes and Kolkata never shifts: a rule in a zone of its own', async () => {
    dataOf(
      await put({
        rules: [
          { location_id: bucharest, weekday: 6, start: '09:00', end: '10:00', time_zone: 'Australia/Lord_Howe' },
          { location_id: bucharest, weekday: 1, start: '09:00', end: '10:00', time_zone: 'Asia/Kolkata' },
        ],
      }),
    );
    // Lord Howe: UTC+10:30 until 02:00 on Sunday 2026-10-04, then UTC+11.
    assert.deepEqual(await windows('2026-10-03', '2026-10-12'), [
      ['2026-10-02T22:30:00.000Z', '2026-10-02T23:30:00.000Z', bucharest],
      ['2026-10-05T03:30:00.000Z', '2026-10-05T04:30:00.000Z', bucharest],
      ['2026-10-09T22:00:00.000Z', '2026-10-09T23:00:00.000Z', bucharest],
      ['2026-10-12T03:30:00.000Z', '2026-10-12T04:30:00.000Z', bucharest],
    ]);
  });

  it('exceptions: time off removes (a whole day, or hours, at one location or everywhere), extra hours add; effective ranges bound rules', async () => {
    dataOf(
      await put({
        rules: [
          { location_id: bucharest, weekday: 1, start: '09:00', end: '17:00', effective_until: '2026-03-16' },
          { location_id: newYork, weekday: 1, start: '18:00', end: '20:00', time_zone: 'Europe/Bucharest' },
        ],
        exceptions: [
          // Monday 2026-03-02: 12:00-13:00 off at Bucharest only.
          { kind: 'time_off', date: '2026-03-02', location_id: bucharest, start: '12:00', end: '13:00' },
          // Monday 2026-03-09: the whole day off everywhere.
          { kind: 'time_off', date: '2026-03-09', time_zone: 'Europe/Bucharest' },
          // Saturday 2026-03-07: extra hours.
          { kind: 'extra_hours', date: '2026-03-07', location_id: bucharest, start: '10:00', end: '12:00' },
        ],
      }),
    );
    // Bucharest is UTC+2 in March until the 29th.
    assert.deepEqual(await windows('2026-03-02', '2026-03-23'), [
      ['2026-03-02T07:00:00.000Z', '2026-03-02T10:00:00.000Z', bucharest],
      ['2026-03-02T11:00:00.000Z', '2026-03-02T15:00:00.000Z', bucharest],
      ['2026-03-02T16:00:00.000Z', '2026-03-02T18:00:00.000Z', newYork],
      ['2026-03-07T08:00:00.000Z', '2026-03-07T10:00:00.000Z', bucharest],
      ['2026-03-16T07:00:00.000Z', '2026-03-16T15:00:00.000Z', bucharest],
      ['2026-03-16T16:00:00.000Z', '2026-03-16T18:00:00.000Z', newYork],
      // 2026-03-23: past the Bucharest rule's effective_until; the other rule goes on.
      ['2026-03-23T16:00:00.000Z', '2026-03-23T18:00:00.000Z', newYork],
    ]);
  });

  it('inconsistent availability is 422 validation_failed with every problem in fields, and nothing changes', async () => {
    const before = dataOf(await put({ rules: [{ location_id: bucharest, weekday: 3, start: '09:00', end: '12:00' }] }));
    const res = await put({
      rules: [
        { location_id: bucharest, weekday: 1, start: '09:00', end: '12:00' },
        { location_id: newYork, weekday: 1, start: '11:00', end: '13:00' },
        { location_id: bucharest, weekday: 2, start: '12:00', end: '09:00' },
        { location_id: bucharest, weekday: 3, start: '09:00', end: '10:00', time_zone: 'Mars/Olympus_Mons' },
        { location_id: unlinked, weekday: 4, start: '09:00', end: '10:00' },
        { location_id: bucharest, weekday: 5, start: '09:00', end: '10:00', effective_from: '2026-05-01', effective_until: '2026-04-01' },
      ],
      exceptions: [
        { kind: 'extra_hours', date: '2026-05-02', start: '09:00', end: '10:00', time_zone: 'Europe/Bucharest' },
        { kind: 'time_off', date: '2026-05-03', location_id: bucharest, start: '09:00' },
        { kind: 'time_off', date: '2026-05-04' },
      ],
    });
    assertError(res, 422, 'validation_failed');
    assert.deepEqual(Object.keys(res.json().error.fields).sort(), [
      'exceptions[0].location_id',
      'exceptions[1].end',
      'exceptions[2].time_zone',
      'rules[1]',
      'rules[2].end',
      'rules[3].time_zone',
      'rules[4].location_id',
      'rules[5].effective_until',
    ]);
    assert.deepEqual(dataOf(await get()).rules, before.rules);
  });

  it('rules on one weekday may touch, and may overlap when their effective ranges do not meet', async () => {
    const res = await put({
      rules: [
        { location_id: bucharest, weekday: 1, start: '09:00', end: '12:00', effective_until: '2026-06-30' },
        { location_id: newYork, weekday: 1, start: '12:00', end: '14:00' },
        { location_id: bucharest, weekday: 1, start: '08:00', end: '11:00', effective_from: '2026-07-01' },
      ],
    });
    assert.equal(dataOf(res).rules.length, 3);
    const overlapping = await put({
      rules: [
        { location_id: bucharest, weekday: 1, start: '09:00', end: '12:00', effective_until: '2026-07-01' },
        { location_id: bucharest, weekday: 1, start: '08:00', end: '11:00', effective_from: '2026-07-01' },
      ],
    });
    assertError(overlapping, 422, 'validation_failed');
    assert.match(overlapping.json().error.fields['rules[1]'], /overlaps rules\[0\]/);
  });

  it('the window range: from and to together, to not before from, at most 62 days (422)', async () => {
    assertError(await get('from=2026-01-01'), 422, 'validation_failed');
    assertError(await get('from=2026-01-10&to=2026-01-01'), 422, 'validation_failed');
    assertError(await get('from=2026-01-01&to=2026-03-04'), 422, 'validation_failed');
    // PostgreSQL has no year 0: a date the format allows but the database does not is 422, not 500.
    assertError(await get('from=0000-01-01&to=0000-01-02'), 422, 'validation_failed');
    assert.ok(Array.isArray(dataOf(await get('from=2026-01-01&to=2026-03-03')).windows));
    const malformed = await put({ rules: [{ location_id: bucharest, weekday: 8, start: '9:00', end: '25:00' }] });
    assert.equal(malformed.statusCode, 400, malformed.body);
  });

  it('a year-0000 date in the body is 400 validation_error and changes nothing (the format allowed it, the column not: 500)', async () => {
    const before = dataOf(await get());
    const rule = { location_id: bucharest, weekday: 1, start: '09:00', end: '12:00' };
    for (const body of [
      { rules: [{ ...rule, effective_from: '0000-01-01' }] },
      { rules: [{ ...rule, effective_until: '0000-12-31' }] },
      { rules: [rule], exceptions: [{ kind: 'time_off', date: '0000-01-03' }] },
    ]) {
      assertError(await put(body), 400, 'validation_error');
    }
    assert.deepEqual(dataOf(await get()), before);
  });

  it('a location in use by availability cannot be unlinked from the specialist or deleted (409 location_in_use)', async () => {
    dataOf(await put({ rules: [{ location_id: newYork, weekday: 1, start: '09:00', end: '10:00' }] }));
    const unlink = await t.call('PUT', `/v1/specialists/${specialist}`, {
      token: admin,
      org,
      body: { display_name: 'Dr Kept', location_ids: [bucharest] },
    });
    assertError(unlink, 409, 'location_in_use');
    assertError(await t.call('DELETE', `/v1/organizations/${org}/locations/${newYork}`, { token: admin }), 409, 'location_in_use');
    dataOf(await put({ rules: [] }));
    assert.deepEqual(
      dataOf(
        await t.call('PUT', `/v1/specialists/${specialist}`, {
          token: admin,
          org,
          body: { display_name: 'Dr Kept', location_ids: [bucharest, newYork] },
        }),
      ).location_ids.length,
      2,
    );
  });

  it('who may: the specialist itself edits its own hours, not a colleague; the front desk and patients read; other organizations see nothing', async () => {
    const mine = { rules: [{ location_id: bucharest, weekday: 4, start: '10:00', end: '11:00' }] };
    dataOf(await put(mine, selfToken));
    assertError(await put(mine, selfToken, colleague), 403, 'forbidden');
    assertError(await put(mine, colleagueToken), 403, 'forbidden');
    assertError(await put(mine, support), 403, 'forbidden');
    assertError(await put(mine, patient), 403, 'forbidden');
    assert.equal(dataOf(await get('', support)).rules.length, 1);
    assert.equal(dataOf(await get('', patient)).rules.length, 1);
    // Another organization's admin, acting at its own organization, finds no such specialist.
    assertError(await t.call('GET', url(specialist), { token: otherAdmin, org: otherOrg }), 404, 'not_found');
    assertError(await t.call('PUT', url(specialist), { token: otherAdmin, org: otherOrg, body: mine }), 404, 'not_found');
    // ...and at this one, it is no member.
    assertError(await t.call('GET', url(specialist), { token: otherAdmin, org }), 403, 'forbidden');
    assertError(await t.call('GET', url(specialist)), 401, 'unauthorized');
  });

  it('a change is audited (counts, no times) and emitted as specialist.availability_updated', async () => {
    dataOf(await put({ rules: [{ location_id: bucharest, weekday: 5, start: '10:00', end: '11:00' }], exceptions: [] }));
    const audit = await t.db.query<{ data: Record<string, unknown> }>(
      `select data from audit_logs where entity_id = $1 and action = 'specialist.availability_updated' order by created_at desc, id desc limit 1`,
      [specialist],
    );
    assert.deepEqual(audit.rows[0]?.data, { rules: 1, exceptions: 0 });
    const events = await t.db.query<{ data: Record<string, unknown> }>(
      `select data from domain_events where organization_id = $1 and type = 'specialist.availability_updated' order by occurred_at desc limit 1`,
      [org],
    );
    assert.equal(events.rows[0]?.data.id, specialist);
    assert.equal(events.rows[0]?.data.rules, 1);
  });
});
