import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertError, dataOf, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

/*
 * Pickers of the clinical resources (spec 4.1): q (trimmed, case-insensitive substring), ids (win over q,
 * invalid ones dropped), limit (default 20, at most 50), no pagination; the organization in scope only,
 * row policies deciding what a caller may see.
 */
describe('pickers', () => {
  let t: TestApp;
  let org: string;
  let otherOrg: string;
  let admin: string;
  let otherAdmin: string;
  let patient: { token: string; userId: string };
  const ana = uniqueEmail('ana.picker');

  const get = (url: string, token: string, at = org) => t.call('GET', url, { token, org: at });

  before(async () => {
    t = await startTestApp();
    org = (await t.createOrg()).id;
    otherOrg = (await t.createOrg()).id;
    for (const o of [org, otherOrg]) await t.publishPrivacyNotice(o);
    admin = (await t.addMember(org, uniqueEmail('pk-admin'), 'admin')).token;
    otherAdmin = (await t.addMember(otherOrg, uniqueEmail('pk-other'), 'admin')).token;
    patient = await t.addPatient(org, uniqueEmail('pk-patient'));
    await t.acceptOrgPurposes(org, patient.userId);
    dataOf(await t.call('POST', '/v1/patients', { token: admin, org, body: { email: ana, first_name: 'Ana', last_name: 'Pop' } }), 201);
    for (let i = 0; i < 55; i++)
      dataOf(
        await t.call('POST', '/v1/patients', { token: admin, org, body: { email: uniqueEmail(`bulk${i}`), last_name: `Bulk ${i}` } }),
        201,
      );
    dataOf(
      await t.call('POST', '/v1/patients', {
        token: otherAdmin,
        org: otherOrg,
        body: { email: uniqueEmail('ana.elsewhere'), first_name: 'Ana' },
      }),
      201,
    );
    const service = (name: string, is_public: boolean) =>
      t.call('POST', '/v1/services', {
        token: admin,
        org,
        body: { name, duration_minutes: 30, price_minor: 100, currency: 'EUR', mode: 'video', is_public },
      });
    dataOf(await service('Video consult', true), 201);
    dataOf(await service('Video internal review', false), 201);
    dataOf(
      await t.call('POST', '/v1/products', {
        token: admin,
        org,
        body: { name: 'Knee brace', sku: 'kb-1', price_minor: 5000, currency: 'EUR' },
      }),
      201,
    );
  });
  after(() => t?.close());

  it('patients by name or email substring, this organization only; ids win over q; limit clamps to 50', async () => {
    const byEmail = dataOf(await get(`/v1/patients/picker?q=${encodeURIComponent(ana.slice(0, 9).toUpperCase())}`, admin));
    assert.deepEqual(
      byEmail.map((p: { label: string; detail: string }) => [p.label, p.detail]),
      [['Ana Pop', ana]],
    );
    const byName = dataOf(await get('/v1/patients/picker?q=%20ana%20', admin));
    assert.deepEqual(
      byName.map((p: { label: string }) => p.label),
      ['Ana Pop'],
      "the other clinic's Ana is not offered",
    );
    const id = byEmail[0].id;
    const byIds = dataOf(await get(`/v1/patients/picker?q=zzz&ids=${id},not-a-uuid`, admin));
    assert.deepEqual(
      byIds.map((p: { id: string }) => p.id),
      [id],
    );
    assert.equal(dataOf(await get('/v1/patients/picker', admin)).length, 20);
    assert.equal(dataOf(await get('/v1/patients/picker?limit=5000', admin)).length, 50);
    assert.equal((await get('/v1/patients/picker', admin)).json().pagination, undefined);
    assertError(await get('/v1/patients/picker', patient.token), 403, 'forbidden');
  });

  it('services and plans as row policies show them: a patient picks public services, never products', async () => {
    assert.deepEqual(
      dataOf(await get('/v1/services/picker?q=video', admin)).map((s: { label: string }) => s.label),
      ['Video consult', 'Video internal review'],
    );
    assert.deepEqual(
      dataOf(await get('/v1/services/picker?q=video', patient.token)).map((s: { label: string }) => s.label),
      ['Video consult'],
    );
    assert.deepEqual(
      dataOf(await get('/v1/products/picker?q=KB', admin)).map((p: { label: string; detail: string }) => [p.label, p.detail]),
      [['Knee brace', 'KB-1']],
    );
    assertError(await get('/v1/products/picker', patient.token), 403, 'forbidden');
    assert.deepEqual(dataOf(await get('/v1/services/picker?q=video', otherAdmin, otherOrg)), []);
  });
});
