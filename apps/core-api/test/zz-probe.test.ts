import { it } from 'node:test';
import { startTestApp, uniqueEmail } from './helpers.ts';
it('probe', async () => {
  const t = await startTestApp();
  const org = await t.createOrg();
  const m = await t.addMember(org.id, uniqueEmail(), 'admin');
  const r = await t.call('GET', '/v1/me', { token: m.token });
  console.log(r.statusCode, r.body, r.headers);
  const su = await t.superadmin();
  console.log((await t.call('GET', '/v1/me', { token: su })).body);
  console.log((await t.call('GET', '/v1/organizations/' + org.id, { token: su })).body);
  console.log((await t.call('GET', '/v1/public/organizations/resolve?slug=' + org.slug)).body);
  await t.close();
});
