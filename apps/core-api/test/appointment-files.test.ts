import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { sweepOrphanAppointmentFiles } from '../src/modules/appointments/jobs.ts';
import { ORPHAN_GRACE_MS } from '../src/platform/file-store.ts';
import { assertError, dataOf, MISSING_UUID, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';
import { type Clinic, multipart, PDF, PNG, setUpClinic, uploadTo } from './support/appointment-clinic.ts';

/*
 * Appointment files (spec 4.5 Appointments): the form files' store, limits and sniffing.
 * Staff who may update the appointment and its patient add them; whoever reads the appointment reads
 * them; a patient removes only what its side added. Malformed multipart is 400/413 and stores nothing.
 */

const MAX = 64 * 1024;

describe('appointment files', () => {
  let t: TestApp;
  let c: Clinic;
  let other: Clinic;

  const keyOf = async (fileId: string) =>
    (await t.db.query<{ asset_key: string }>('select asset_key from appointment_files where id = $1', [fileId])).rows[0]?.asset_key;
  const list = (id: string, token: string, org = c.org.id) => t.call('GET', `/v1/appointments/${id}/files`, { token, org });
  const send = (id: string, contentType: string, payload: string | Buffer, token = c.support) =>
    t.app.inject({
      method: 'POST',
      url: `/v1/appointments/${id}/files`,
      payload,
      headers: { authorization: `Bearer ${token}`, 'x-organization-id': c.org.id, 'content-type': contentType },
    });
  const objectsUnder = async (id: string) => (await t.rt.assets.list(`orgs/${c.org.id}/appointments/${id}/`)).length;

  before(async () => {
    t = await startTestApp({ env: { FORM_FILE_MAX_BYTES: String(MAX), RATELIMIT_PUBLIC_LIMIT: '100000' } });
    c = await setUpClinic(t, 'files');
    other = await setUpClinic(t, 'files-other');
  });
  after(() => t?.close());

  it('the front desk attaches a PDF: 201, listed, downloaded as stored (attachment, nosniff), audited and emitted', async () => {
    const a = await c.book();
    const file = dataOf(await uploadTo(t, a.id, c.support, c.org.id), 201);
    assert.deepEqual(
      [file.appointment_id, file.filename, file.content_type, file.size_bytes, file.uploaded_by, file.sha256],
      [a.id, 'referral.pdf', 'application/pdf', PDF.length, 'staff', createHash('sha256').update(PDF).digest('hex')],
    );
    assert.equal('asset_key' in file, false);
    assert.deepEqual(
      dataOf(await list(a.id, c.admin)).map((f: { id: string }) => f.id),
      [file.id],
    );
    const dl = await t.call('GET', `/v1/appointments/${a.id}/files/${file.id}`, { token: c.patient.token, org: c.org.id });
    assert.equal(dl.statusCode, 200);
    assert.deepEqual(dl.rawPayload, PDF);
    assert.equal(dl.headers['content-type'], 'application/pdf');
    assert.equal(dl.headers['x-content-type-options'], 'nosniff');
    assert.match(String(dl.headers['content-disposition']), /^attachment; filename="referral.pdf"/);
    const audit = await t.db.query<{ data: any }>(
      "select data from audit_logs where action = 'appointment.file_added' and entity_id = $1",
      [a.id],
    );
    assert.deepEqual(audit.rows[0]?.data.file_id, file.id);
    assert.ok(!JSON.stringify(audit.rows[0]?.data).includes('referral'), 'no file name in the audit trail');
    const events = await t.db.query<{ type: string; data: any }>(
      "select type, data from domain_events where organization_id = $1 and type like 'appointment.file%' and data->>'id' = $2",
      [c.org.id, a.id],
    );
    assert.deepEqual(
      events.rows.map((e) => [e.type, e.data.file_id]),
      [['appointment.file_added', file.id]],
    );
  });

  it('the patient attaches to its own appointment, removes what it added (the object goes after commit) but not what staff added', async () => {
    const a = await c.book();
    const staffFile = dataOf(await uploadTo(t, a.id, c.support, c.org.id), 201);
    const own = dataOf(await uploadTo(t, a.id, c.patient.token, c.org.id, { name: 'photo.png', type: 'image/png', bytes: PNG }), 201);
    assert.equal(own.uploaded_by, 'patient');
    assert.equal(dataOf(await list(a.id, c.patient.token)).length, 2);
    assertError(
      await t.call('DELETE', `/v1/appointments/${a.id}/files/${staffFile.id}`, { token: c.patient.token, org: c.org.id }),
      403,
      'forbidden',
    );
    const key = await keyOf(own.id);
    assert.ok(key && (await t.rt.assets.head(key)));
    dataOf(await t.call('DELETE', `/v1/appointments/${a.id}/files/${own.id}`, { token: c.patient.token, org: c.org.id }), 204);
    assert.equal(await t.rt.assets.head(key!), null, 'the object is deleted after commit');
    assertError(
      await t.call('DELETE', `/v1/appointments/${a.id}/files/${own.id}`, { token: c.patient.token, org: c.org.id }),
      404,
      'not_found',
    );
    // Staff who may update it remove any file.
    dataOf(await t.call('DELETE', `/v1/appointments/${a.id}/files/${staffFile.id}`, { token: c.admin, org: c.org.id }), 204);
    assert.deepEqual(dataOf(await list(a.id, c.admin)), []);
    const removed = await t.db.query("select 1 from audit_logs where action = 'appointment.file_removed' and entity_id = $1", [a.id]);
    assert.equal(removed.rows.length, 2);
  });

  it("a specialist acts on its own appointments only (update_own); another patient's or clinic's appointment is 404", async () => {
    const mine = await c.book({ specialist: 0 });
    const theirs = await c.book({ specialist: 1 });
    const [spec0] = c.specialists;
    dataOf(await uploadTo(t, mine.id, spec0!.token, c.org.id), 201);
    assertError(await uploadTo(t, theirs.id, spec0!.token, c.org.id), 404, 'not_found');
    assertError(await list(theirs.id, spec0!.token), 404, 'not_found');
    // Another patient of the clinic.
    assertError(await uploadTo(t, mine.id, c.otherPatient.token, c.org.id), 404, 'not_found');
    assertError(await list(mine.id, c.otherPatient.token), 404, 'not_found');
    // Another clinic's administrator: its own organization does not hold the appointment; this one is not its.
    assertError(await list(mine.id, other.admin, other.org.id), 404, 'not_found');
    assertError(await uploadTo(t, mine.id, other.admin, other.org.id), 404, 'not_found');
    // Signed in, no relation to the clinic (a first sign-in there would make it a patient who has not
    // accepted the clinic's notice yet: 412 before any gate).
    for (const res of [
      await list(mine.id, other.admin, c.org.id),
      await uploadTo(t, mine.id, await t.token(uniqueEmail('files-outsider')), c.org.id),
    ]) {
      assert.ok([403, 412].includes(res.statusCode), res.body);
      assert.equal(res.json().data, undefined);
    }
    assertError(await t.call('GET', `/v1/appointments/${mine.id}/files`, { org: c.org.id }), 401, 'unauthorized');
    assertError(await list(MISSING_UUID, c.admin), 404, 'not_found');
    const file = dataOf(await list(mine.id, c.admin))[0];
    assertError(await t.call('GET', `/v1/appointments/${theirs.id}/files/${file.id}`, { token: c.admin, org: c.org.id }), 404, 'not_found');
  });

  it('wrong types: a type not allowed, bytes that are not the declared type, text with NUL bytes: 415, nothing stored', async () => {
    const a = await c.book();
    const cases = [
      { name: 'x.gif', type: 'image/gif', bytes: Buffer.from('GIF89a....') },
      { name: 'fake.pdf', type: 'application/pdf', bytes: PNG },
      { name: 'evil.png', type: 'image/png', bytes: Buffer.from('MZ\x90\x00 not a png') },
      { name: 'nul.txt', type: 'text/plain', bytes: Buffer.from('a\u0000b') },
      { name: 'bad-utf8.txt', type: 'text/plain', bytes: Buffer.from([0x61, 0xed, 0xa0, 0x80, 0x62]) },
    ];
    for (const f of cases) assertError(await uploadTo(t, a.id, c.support, c.org.id, f), 415, 'unsupported_media_type');
    assert.deepEqual(dataOf(await list(a.id, c.admin)), []);
    assert.equal(await objectsUnder(a.id), 0);
  });

  it(`oversized: more than FORM_FILE_MAX_BYTES (${MAX}) is 413 file_too_large; exactly the limit is stored`, async () => {
    const a = await c.book();
    const pdf = (size: number) => Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(size - 9, 0x20)]);
    assertError(
      await uploadTo(t, a.id, c.support, c.org.id, { name: 'big.pdf', type: 'application/pdf', bytes: pdf(MAX + 1) }),
      413,
      'file_too_large',
    );
    assert.equal(await objectsUnder(a.id), 0);
    const ok = dataOf(await uploadTo(t, a.id, c.support, c.org.id, { name: 'edge.pdf', type: 'application/pdf', bytes: pdf(MAX) }), 201);
    assert.equal(ok.size_bytes, MAX);
  });

  it('malformed multipart is 400 invalid_body (413 for too many parts), JSON is 400 validation_error; nothing stored', async () => {
    const a = await c.book();
    const B = 'apptBoundary';
    const part = `--${B}\r\nContent-Disposition: form-data; name="file"; filename="a.pdf"\r\nContent-Type: application/pdf\r\n\r\n%PDF-1.4 x\r\n`;
    const field = (i: number) => `--${B}\r\nContent-Disposition: form-data; name="f${i}"\r\n\r\nv${i}\r\n`;
    const cases: [string, string | Buffer, number, string][] = [
      ['multipart/form-data', `${part}--${B}--\r\n`, 400, 'invalid_body'],
      [`multipart/form-data; boundary=${B}`, 'no parts at all', 400, 'invalid_body'],
      [`multipart/form-data; boundary=${B}`, part.slice(0, -2), 400, 'invalid_body'],
      [`multipart/form-data; boundary=${B}`, `--${B}\r\nContent-Disposition: form-da`, 400, 'invalid_body'],
      [`multipart/form-data; boundary=${B}`, Buffer.from([0xff, 0xfe, 0x00, 0x01, 0x2d, 0x2d]), 400, 'invalid_body'],
      [
        `multipart/form-data; boundary=${B}`,
        `${Array.from({ length: 40 }, (_, i) => field(i)).join('')}${part}--${B}--\r\n`,
        413,
        'payload_too_large',
      ],
      [`multipart/form-data; boundary=${B}`, '', 400, 'validation_error'],
      ['application/json', '{"file":"x"}', 400, 'validation_error'],
    ];
    for (const [type, payload, status, code] of cases) assertError(await send(a.id, type, payload), status, code);
    // A file in another field than "file".
    const wrongField = multipart({ name: 'a.pdf', type: 'application/pdf', bytes: PDF }, 'document');
    assertError(await send(a.id, wrongField.contentType, wrongField.payload), 400, 'validation_error');
    assert.deepEqual(dataOf(await list(a.id, c.admin)), []);
    assert.equal(await objectsUnder(a.id), 0);
  });

  it('NUL and surrogates: stripped from a file name; in a path parameter 404', async () => {
    const a = await c.book();
    const f = dataOf(
      await uploadTo(t, a.id, c.support, c.org.id, { name: 'sc\u0001an\u0000.pdf', type: 'application/pdf', bytes: PDF }),
      201,
    );
    assert.equal(f.filename, 'scan.pdf');
    for (const bad of ['%00', 'a%00b', '%ED%A0%80', '%F0%9F%98']) {
      const res = await t.call('GET', `/v1/appointments/${a.id}/files/${bad}`, { token: c.admin, org: c.org.id });
      assert.ok([400, 404].includes(res.statusCode), `${bad}: ${res.statusCode} ${res.body}`);
      assert.ok(res.statusCode < 500);
    }
    assertError(await t.call('GET', `/v1/appointments/%00/files`, { token: c.admin, org: c.org.id }), 404, 'not_found');
  });

  it('Idempotency-Key on upload: a retry gets the first file back, one row', async () => {
    const a = await c.book();
    const first = await uploadTo(t, a.id, c.support, c.org.id, undefined, { 'idempotency-key': 'appt-upload-1' });
    const again = await uploadTo(t, a.id, c.support, c.org.id, undefined, { 'idempotency-key': 'appt-upload-1' });
    assert.equal(first.statusCode, 201, first.body);
    assert.equal(again.statusCode, 201, again.body);
    assert.equal(again.headers['idempotency-replayed'], 'true');
    assert.equal(again.json().data.id, first.json().data.id);
    assert.equal(dataOf(await list(a.id, c.admin)).length, 1);
  });

  it('a cancelled appointment takes no new file (409 appointment_closed); a reschedule carries the files to the new appointment', async () => {
    const moved = await c.book();
    const f = dataOf(await uploadTo(t, moved.id, c.patient.token, c.org.id), 201);
    const next = dataOf(
      await t.call('PATCH', `/v1/appointments/${moved.id}`, { token: c.support, org: c.org.id, body: { start: await c.nextSlot(0) } }),
    );
    assert.notEqual(next.id, moved.id);
    assert.deepEqual(
      dataOf(await list(next.id, c.patient.token)).map((x: { id: string }) => x.id),
      [f.id],
    );
    assert.deepEqual(dataOf(await list(moved.id, c.patient.token)), []);
    assertError(await uploadTo(t, moved.id, c.support, c.org.id), 409, 'appointment_closed');
    // The file still downloads from its new appointment (its object key is unchanged).
    assert.equal((await t.call('GET', `/v1/appointments/${next.id}/files/${f.id}`, { token: c.admin, org: c.org.id })).statusCode, 200);

    await c.move(next.id, 'cancelled');
    assertError(await uploadTo(t, next.id, c.patient.token, c.org.id), 409, 'appointment_closed');
    assert.equal(await objectsUnder(next.id), 0, 'nothing stored for a refused upload');
    // Removing stays possible.
    dataOf(await t.call('DELETE', `/v1/appointments/${next.id}/files/${f.id}`, { token: c.patient.token, org: c.org.id }), 204);
  });

  it('orphan sweep: objects no row names go once past the grace period (an upload cut short, a deleted booking); live files stay', async () => {
    const a = await c.book();
    const live = dataOf(await uploadTo(t, a.id, c.support, c.org.id), 201);
    const liveKey = (await keyOf(live.id))!;
    const gone = await c.book();
    const goneFile = dataOf(await uploadTo(t, gone.id, c.support, c.org.id), 201);
    const goneKey = (await keyOf(goneFile.id))!;
    // DELETE of a booking that never took place takes its file rows with it.
    dataOf(await t.call('DELETE', `/v1/appointments/${gone.id}`, { token: c.admin, org: c.org.id }), 204);
    assert.ok(await t.rt.assets.head(goneKey), 'the object waits for the sweep');
    const v7At = (ms: number) => {
      const h = ms.toString(16).padStart(12, '0');
      return `${h.slice(0, 8)}-${h.slice(8, 12)}-7000-8000-000000000000`;
    };
    const now = Date.now();
    const oldOrphan = `orgs/${c.org.id}/appointments/${a.id}/${v7At(now - ORPHAN_GRACE_MS - 60_000)}`;
    const youngOrphan = `orgs/${c.org.id}/appointments/${a.id}/${v7At(now)}`;
    await t.rt.assets.put(oldOrphan, PDF, { contentType: 'application/pdf' });
    await t.rt.assets.put(youngOrphan, PDF, { contentType: 'application/pdf' });
    const deps = { db: t.db, assets: t.rt.assets, logger: t.rt.logger };
    assert.deepEqual((await sweepOrphanAppointmentFiles(deps, now + 1000)).sort(), [oldOrphan]);
    assert.deepEqual((await sweepOrphanAppointmentFiles(deps, now + 2 * ORPHAN_GRACE_MS)).sort(), [goneKey, youngOrphan].sort());
    assert.deepEqual(await sweepOrphanAppointmentFiles(deps, now + 2 * ORPHAN_GRACE_MS), []);
    assert.ok(await t.rt.assets.head(liveKey), 'a file a row names is never swept');
  });
});
