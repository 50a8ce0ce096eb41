import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertError, dataOf, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';
import { type Clinic, setUpClinic } from './support/appointment-clinic.ts';

/*
 * Reviews (spec 4.5 Appointments): the appointment's patient, once, after the visit is
 * done, rating 1-5 with an optional comment; whoever reads the appointment reads its review.
 */

describe('appointment reviews', () => {
  let t: TestApp;
  let c: Clinic;
  let other: Clinic;

  const review = (id: string, token: string, body: unknown, org = c.org.id) =>
    t.call('POST', `/v1/appointments/${id}/reviews`, { token, org, body });
  const reviews = (id: string, token: string, org = c.org.id) => t.call('GET', `/v1/appointments/${id}/reviews`, { token, org });
  const doneVisit = async (o: Parameters<Clinic['book']>[0] = {}) => {
    const a = await c.book(o);
    await c.move(a.id, 'checked_in', 'done');
    return a;
  };

  before(async () => {
    t = await startTestApp({ env: { RATELIMIT_PUBLIC_LIMIT: '100000' } });
    c = await setUpClinic(t, 'reviews');
    other = await setUpClinic(t, 'reviews-other');
  });
  after(() => t?.close());

  it('the patient reviews a done visit once: 201, then 409 review_exists; staff read it; audited and emitted without the text', async () => {
    const a = await doneVisit();
    const r = dataOf(await review(a.id, c.patient.token, { rating: 5, comment: '  Very kind, thank you!  ' }), 201);
    assert.deepEqual([r.appointment_id, r.patient_id, r.rating, r.comment], [a.id, c.patient.id, 5, 'Very kind, thank you!']);
    assertError(await review(a.id, c.patient.token, { rating: 1 }), 409, 'review_exists');
    for (const token of [c.admin, c.support, c.specialists[0]!.token, c.patient.token]) {
      assert.deepEqual(
        dataOf(await reviews(a.id, token)).map((x: { id: string; rating: number }) => [x.id, x.rating]),
        [[r.id, 5]],
      );
    }
    const audit = (
      await t.db.query<{ data: any }>("select data from audit_logs where action = 'appointment.reviewed' and entity_id = $1", [a.id])
    ).rows;
    assert.deepEqual(
      audit.map((x) => x.data),
      [{ review_id: r.id }],
    );
    const events = (
      await t.db.query<{ data: any }>("select data from domain_events where type = 'appointment.reviewed' and data->>'id' = $1", [a.id])
    ).rows;
    assert.deepEqual(
      events.map((e) => e.data.review_id),
      [r.id],
    );
    assert.ok(!JSON.stringify(events).includes('kind'), 'no comment in the event');
  });

  it('only after done: scheduled, confirmed, checked in, cancelled and no-show visits are 409 appointment_not_done', async () => {
    const a = await c.book();
    assertError(await review(a.id, c.patient.token, { rating: 4 }), 409, 'appointment_not_done');
    await c.move(a.id, 'confirmed');
    assertError(await review(a.id, c.patient.token, { rating: 4 }), 409, 'appointment_not_done');
    await c.move(a.id, 'checked_in');
    assertError(await review(a.id, c.patient.token, { rating: 4 }), 409, 'appointment_not_done');
    const cancelled = await c.book();
    await c.move(cancelled.id, 'cancelled');
    assertError(await review(cancelled.id, c.patient.token, { rating: 4 }), 409, 'appointment_not_done');
    const noShow = await c.book();
    await c.move(noShow.id, 'no_show');
    assertError(await review(noShow.id, c.patient.token, { rating: 4 }), 409, 'appointment_not_done');
    assert.deepEqual(dataOf(await reviews(a.id, c.admin)), []);
  });

  it('who: staff 403, another patient 404, another clinic 404, outsiders and anonymous refused', async () => {
    const a = await doneVisit();
    for (const token of [c.admin, c.support, c.specialists[0]!.token])
      assertError(await review(a.id, token, { rating: 3 }), 403, 'forbidden');
    assertError(await review(a.id, c.otherPatient.token, { rating: 3 }), 404, 'not_found');
    assertError(await reviews(a.id, c.otherPatient.token), 404, 'not_found');
    // The specialist of another appointment does not see it (appointments.view_own).
    assertError(await reviews(a.id, c.specialists[1]!.token), 404, 'not_found');
    assertError(await reviews(a.id, other.admin, other.org.id), 404, 'not_found');
    assertError(await review(a.id, other.patient.token, { rating: 3 }, other.org.id), 404, 'not_found');
    const outsider = await t.call('POST', `/v1/appointments/${a.id}/reviews`, {
      token: await t.token(uniqueEmail('rev-outsider')),
      org: c.org.id,
      body: { rating: 3 },
    });
    assert.ok([403, 412].includes(outsider.statusCode), outsider.body);
    assertError(await t.call('POST', `/v1/appointments/${a.id}/reviews`, { org: c.org.id, body: { rating: 3 } }), 401, 'unauthorized');
    assert.deepEqual(dataOf(await reviews(a.id, c.admin)), [], 'nothing was stored');
  });

  it('bad input is 400 validation_error: ratings outside 1-5 or not integers, a long comment, NUL, lone surrogates, unknown fields', async () => {
    const a = await doneVisit();
    const bad: unknown[] = [
      {},
      { rating: 0 },
      { rating: 6 },
      { rating: 3.5 },
      { rating: '5' },
      { rating: null },
      { rating: 4, comment: 'x'.repeat(2001) },
      { rating: 4, comment: 'a\u0000b' },
      { rating: 4, extra: true },
    ];
    for (const body of bad) assertError(await review(a.id, c.patient.token, body), 400, 'validation_error');
    const surrogate = await t.call('POST', `/v1/appointments/${a.id}/reviews`, {
      token: c.patient.token,
      org: c.org.id,
      rawBody: '{"rating":4,"comment":"bad \\ud800 text"}',
    });
    assertError(surrogate, 400, 'validation_error');
    assert.deepEqual(dataOf(await reviews(a.id, c.admin)), []);
    // A blank comment is no comment; 2000 characters are fine.
    assert.equal(dataOf(await review(a.id, c.patient.token, { rating: 1, comment: '   ' }), 201).comment, null);
    const b = await doneVisit();
    assert.equal(dataOf(await review(b.id, c.patient.token, { rating: 2, comment: 'é'.repeat(2000) }), 201).comment.length, 2000);
  });

  it('two reviews at once: one 201 and one 409 review_exists (the unique constraint decides)', async () => {
    const a = await doneVisit();
    const answers = await Promise.all([1, 2, 3, 4].map((rating) => review(a.id, c.patient.token, { rating })));
    const codes = answers.map((r) => r.statusCode).sort();
    assert.deepEqual(codes, [201, 409, 409, 409], answers.map((r) => r.body).join('\n'));
    assert.ok(answers.filter((r) => r.statusCode === 409).every((r) => r.json().error.code === 'review_exists'));
    assert.equal(dataOf(await reviews(a.id, c.admin)).length, 1);
  });

  it('Idempotency-Key: a retry of the same review replays the first answer', async () => {
    const a = await doneVisit();
    const send = () =>
      t.call('POST', `/v1/appointments/${a.id}/reviews`, {
        token: c.patient.token,
        org: c.org.id,
        body: { rating: 4 },
        headers: { 'idempotency-key': `review-${a.id}` },
      });
    const first = await send();
    const again = await send();
    assert.equal(first.statusCode, 201, first.body);
    assert.equal(again.statusCode, 201);
    assert.equal(again.headers['idempotency-replayed'], 'true');
    assert.equal(again.json().data.id, first.json().data.id);
  });
});
