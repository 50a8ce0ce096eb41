import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { uniqueEmail, uniqueSlug } from '../../core-api/test/helpers.ts';
import { Browser, fakeDist, signIn, startWebWorld, type WebWorld } from './support.ts';

/**
 * The console's door on the proxy (apps/web/src/server/console.ts): platform host only, sign-in first,
 * GET /v1/me decides, a non-superadmin gets the refusal state with 403; and /v1 from the platform host
 * carries the session's bearer token and never an organization.
 */
describe('console access through the proxy', () => {
  let w: WebWorld;
  const platform = () => `http://localhost:${w.port}`;

  before(async () => {
    const dist = await fakeDist();
    await mkdir(join(dist, 'console'), { recursive: true });
    await writeFile(join(dist, 'console', 'index.html'), '<!doctype html><html><head><title>console</title></head><body></body></html>');
    w = await startWebWorld({ distDir: dist });
  });
  after(() => w?.close());

  it('signed out: /console sends to sign-in and back; a clinic host has no console', async () => {
    const b = new Browser();
    const res = await b.fetch(`${platform()}/console/providers`);
    assert.equal(res.status, 302);
    assert.equal(res.headers.location, `/auth/login?return_to=${encodeURIComponent('/console/providers')}`);
    const org = await w.t.createOrg({ slug: uniqueSlug('con') });
    const clinic = await b.fetch(`http://${org.slug}.localhost:${w.port}/console`);
    assert.equal(clinic.status, 404);
  });

  it('a signed-in person who is not a superadmin gets the refusal (403), a superadmin the console (200)', async () => {
    const b = new Browser();
    const landed = await signIn(b, platform(), uniqueEmail('not-operator'), '/console');
    assert.equal(landed.status, 403);
    assert.match(landed.body, /<title>console<\/title>/);
    assert.match(landed.body, /"console":\{"access":"refused"\}/);
    const again = await b.fetch(`${platform()}/console/organizations`);
    assert.equal(again.status, 403);

    const su = new Browser();
    const email = uniqueEmail('operator');
    await w.t.superadmin(email);
    const ok = await signIn(su, platform(), email, '/console');
    assert.equal(ok.status, 200);
    assert.match(ok.body, /"console":\{"access":"granted"\}/);
    assert.doesNotMatch(ok.body, /eyJ/, 'no token in the page');
  });

  it('/v1 on the platform host carries the bearer token and no organization, even when the page sends one', async () => {
    const b = new Browser();
    const email = uniqueEmail('operator-api');
    await w.t.superadmin(email);
    await signIn(b, platform(), email, '/console');
    const org = await w.t.createOrg({ slug: uniqueSlug('forged') });
    const me = await b.fetch(`${platform()}/v1/me`, { headers: { 'x-organization-id': org.id } });
    assert.equal(me.status, 200, me.body);
    assert.equal(me.json().data.email, email);
    assert.equal(me.json().data.is_superadmin, true);
    assert.equal(me.json().data.current_organization_id, null, 'no organization reached the API');
    const status = await b.fetch(`${platform()}/v1/admin/system-status`);
    assert.equal(status.status, 200, status.body);
  });
});
