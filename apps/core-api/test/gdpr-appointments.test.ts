import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { dataOf, startTestApp, type TestApp, uniqueEmail } from './helpers.ts';
import { type Clinic, PNG, type Person, setUpClinic, uploadTo } from './support/appointment-clinic.ts';

/*
 * GDPR and appointments (migration 0068; docs/decisions.md): the export covers the
 * appointments of the person's patient records, their files (metadata) and reviews; erasure removes the
 * files and reviews, cancels what is still ahead (freeing the time) and leaves only the clinic's schedule
 * of the rest (no notes, no reason, no guest contact data). A guest booking that only carries the
 * person's email was never tied to the person and is neither exported nor erased with it.
 */

interface Seeded {
  person: Person;
  done: string;
  upcoming: string;
  cancelled: string;
  tiedGuest: string;
  untiedGuest: string;
  review: string;
  fileKeys: string[];
}

describe('gdpr: appointments, their files and reviews', () => {
  let t: TestApp;
  let c: Clinic;

  const row = async (id: string) =>
    (
      await t.db.query<any>(
        `select status, notes, patient_note, cancellation_reason, guest_name, guest_email, guest_phone, guest_consents
         from appointments where id = $1`,
        [id],
      )
    ).rows[0];
  const activeClaims = async (id: string) =>
    (await t.db.query('select 1 from calendar_claims where appointment_id = $1 and active', [id])).rows.length;

  async function waitExport(token: string, org: string | undefined, body: unknown) {
    const queued = dataOf(await t.call('POST', '/v1/gdpr/export', { token, body, ...(org ? { org } : {}) }), 202);
    for (let i = 0; i < 300; i++) {
      const job = dataOf(await t.call('GET', `/v1/gdpr/exports/${queued.id}`, { token, ...(org ? { org } : {}) }));
      if (job.status === 'done') return JSON.parse((await t.call('GET', job.download_url, { token, ...(org ? { org } : {}) })).body);
      assert.notEqual(job.status, 'failed', JSON.stringify(job));
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error('export did not finish');
  }

  /** A guest booking (public hold and booking) under an email, on specialist 2. */
  async function guestBooking(email: string) {
    const pub = (url: string, payload: unknown) =>
      t.app.inject({ method: 'POST', url, payload: payload as object, remoteAddress: '198.51.100.9' });
    const hold = await pub('/v1/public/holds', {
      organization: c.org.id,
      service_id: c.service,
      specialist_id: c.specialists[1]!.id,
      start: await c.nextSlot(1),
    });
    assert.equal(hold.statusCode, 201, hold.body);
    const h = hold.json().data;
    const booked = await pub('/v1/public/bookings', {
      organization: c.org.id,
      hold_id: h.id,
      secret: h.secret,
      name: 'Guest Name',
      email,
      phone: '+40 799 000 111',
      consents: [{ purpose_code: 'org_privacy_notice', purpose_version: 1 }],
    });
    assert.equal(booked.statusCode, 201, booked.body);
    return booked.json().data.id as string;
  }

  /** The person's visits: one done (files from both sides, notes, a review), one ahead (a file), one cancelled with a reason, two guest bookings. */
  async function seed(person: Person): Promise<Seeded> {
    const done = (await c.book({ patient: person })).id as string;
    dataOf(await c.call('PATCH', `/v1/appointments/${done}`, person.token, { patient_note: 'my knee hurts' }));
    dataOf(await c.call('PATCH', `/v1/appointments/${done}`, c.support, { notes: 'staff remark' }));
    const f1 = dataOf(await uploadTo(t, done, person.token, c.org.id, { name: 'knee.png', type: 'image/png', bytes: PNG }), 201);
    const f2 = dataOf(await uploadTo(t, done, c.support, c.org.id), 201);
    await c.move(done, 'checked_in', 'done');
    const review = dataOf(await c.call('POST', `/v1/appointments/${done}/reviews`, person.token, { rating: 4, comment: 'good' }), 201).id;
    const upcoming = (await c.book({ patient: person })).id as string;
    const f3 = dataOf(await uploadTo(t, upcoming, person.token, c.org.id), 201);
    const cancelled = (await c.book({ patient: person })).id as string;
    dataOf(
      await c.call('PATCH', `/v1/appointments/${cancelled}`, person.token, { status: 'cancelled', cancellation_reason: 'on holiday' }),
    );
    const tiedGuest = await guestBooking(`tied-${person.email}`);
    dataOf(await c.call('PATCH', `/v1/appointments/${tiedGuest}`, c.support, { patient_id: person.id }));
    const untiedGuest = await guestBooking(person.email);
    const keys = await t.db.query<{ asset_key: string }>('select asset_key from appointment_files where id = any($1::uuid[])', [
      [f1.id, f2.id, f3.id],
    ]);
    return { person, done, upcoming, cancelled, tiedGuest, untiedGuest, review, fileKeys: keys.rows.map((r) => r.asset_key) };
  }

  /** What must be true once the person's part of the clinic is erased. */
  async function assertErased(s: Seeded) {
    assert.equal(
      (await t.db.query('select 1 from appointment_files where appointment_id = any($1::uuid[])', [[s.done, s.upcoming]])).rows.length,
      0,
    );
    assert.equal((await t.db.query('select 1 from appointment_reviews where id = $1', [s.review])).rows.length, 0);
    const done = await row(s.done);
    assert.deepEqual([done.status, done.notes, done.patient_note], ['done', null, null], 'the visit stays in the schedule, without text');
    const upcoming = await row(s.upcoming);
    assert.equal(upcoming.status, 'cancelled', 'a booking ahead is cancelled');
    assert.equal(await activeClaims(s.upcoming), 0, 'and its time is free again');
    assert.equal((await row(s.cancelled)).cancellation_reason, null);
    const tied = await row(s.tiedGuest);
    assert.deepEqual([tied.guest_name, tied.guest_email, tied.guest_phone, tied.guest_consents], [null, null, null, []]);
    const untied = await row(s.untiedGuest);
    assert.deepEqual([untied.status, untied.guest_email, untied.guest_name], ['scheduled', s.person.email.toLowerCase(), 'Guest Name']);
    const events = await t.db.query<{ data: any }>(
      "select data from domain_events where type = 'appointment.cancelled' and data->>'id' = $1",
      [s.upcoming],
    );
    assert.deepEqual(
      events.rows.map((e) => [e.data.from, e.data.to]),
      [['scheduled', 'cancelled']],
    );
    // The objects are deleted after the erasure commits, without waiting for the orphan sweep.
    for (const key of s.fileKeys) assert.equal(await t.rt.assets.head(key), null, key);
  }

  before(async () => {
    t = await startTestApp({ env: { RATELIMIT_PUBLIC_LIMIT: '100000', RATELIMIT_HOLDS_PER_IP: '100000' } });
    c = await setUpClinic(t, 'gdpr-appt');
  });
  after(() => t?.close());

  it("export: the clinic's copy holds every appointment with notes, files and reviews; the person's leaves out staff notes and ids; an untied guest booking is in neither", async () => {
    const s = await seed(c.patient);
    const clinic = await waitExport(c.admin, c.org.id, { patient_id: c.patient.id });
    const ids = (xs: { id: string }[]) => xs.map((x) => x.id).sort();
    assert.deepEqual(ids(clinic.appointments), [s.done, s.upcoming, s.cancelled, s.tiedGuest].sort());
    const done = clinic.appointments.find((a: { id: string }) => a.id === s.done);
    assert.deepEqual(
      [done.notes, done.patient_note, done.status, done.service_name],
      ['staff remark', 'my knee hurts', 'done', 'Physio session'],
    );
    assert.ok(done.created_by_principal_id);
    assert.deepEqual(
      clinic.appointment_files.map((f: any) => [f.appointment_id, f.filename, f.uploaded_by]).sort(),
      [
        [s.done, 'knee.png', 'patient'],
        [s.done, 'referral.pdf', 'staff'],
        [s.upcoming, 'referral.pdf', 'patient'],
      ].sort(),
    );
    assert.ok(!JSON.stringify(clinic.appointment_files).includes('asset_key'));
    assert.deepEqual(
      clinic.appointment_reviews.map((r: any) => [r.id, r.appointment_id, r.rating, r.comment]),
      [[s.review, s.done, 4, 'good']],
    );
    assert.ok(clinic.audit_entries.some((e: any) => e.action === 'appointment.reviewed' && e.entity_id === s.done));

    const own = await waitExport(c.patient.token, undefined, {});
    assert.deepEqual(ids(own.appointments), ids(clinic.appointments));
    const mine = own.appointments.find((a: { id: string }) => a.id === s.done);
    assert.equal(mine.patient_note, 'my knee hurts');
    for (const k of ['notes', 'created_by_principal_id', 'cancelled_by_principal_id'])
      assert.ok(!(k in mine), `${k} is not in the person's copy`);
    assert.equal(own.appointment_files.length, 3);
    assert.equal(own.appointment_reviews.length, 1);
    assert.ok(!JSON.stringify(own).includes(s.untiedGuest), "a guest booking under the email alone is not the person's");
  });

  it('clinic erasure: files and reviews go, a booking ahead is cancelled and its time freed, the rest keeps only the schedule', async () => {
    const person = c.otherPatient;
    const s = await seed(person);
    const bystander = await c.book();
    dataOf(await c.call('PATCH', `/v1/appointments/${bystander.id}`, c.patient.token, { patient_note: 'not erased' }));
    dataOf(await c.call('POST', '/v1/gdpr/erase', c.admin, { patient_id: person.id }));
    await assertErased(s);
    assert.equal((await row(bystander.id)).patient_note, 'not erased', "another patient's appointment is untouched");
    // The clinic still reads the visit, now without the person's text; its files and review are gone.
    const a = dataOf(await c.call('GET', `/v1/appointments/${s.done}`, c.admin));
    assert.deepEqual([a.status, a.notes, a.patient_note], ['done', null, null]);
    assert.deepEqual(dataOf(await c.call('GET', `/v1/appointments/${s.done}/files`, c.admin)), []);
    assert.deepEqual(dataOf(await c.call('GET', `/v1/appointments/${s.done}/reviews`, c.admin)), []);
  });

  it('account deletion (DELETE /v1/me) erases the same', async () => {
    const person = await thirdPatient();
    const s = await seed(person);
    assert.equal((await t.call('DELETE', '/v1/me', { token: person.token, org: c.org.id })).statusCode, 204);
    await assertErased(s);
  });

  /** One more patient of the clinic (the fixture's two are used above). */
  async function thirdPatient(): Promise<Person> {
    const email = uniqueEmail('gdpr-appt-third');
    const p = await t.addPatient(c.org.id, email);
    await t.acceptOrgPurposes(c.org.id, p.userId);
    const id = (
      await t.db.query<{ id: string }>('select id from patients where organization_id = $1 and user_id = $2', [c.org.id, p.userId])
    ).rows[0]!.id;
    return { ...p, id, email };
  }
});
