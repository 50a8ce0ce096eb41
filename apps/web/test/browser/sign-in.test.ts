import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Platform, skipWithoutChromium, startPlatform } from './harness.ts';

/**
 * Sign-in and sign-out in a real browser, through the real pages: the clinic page's `Sign in` link, the
 * development provider's page (the `Email` field, the `Sign in` button), back on the clinic host signed in;
 * then `Sign out`, and the old session cookie no longer works.
 */
describe('browser: sign-in through the development OpenID provider', { skip: skipWithoutChromium() }, () => {
  let p: Platform;
  before(async () => {
    p = await startPlatform();
  });
  after(() => p?.close());

  it('signs in from the clinic page and signs out; the old session cookie is refused afterwards', async () => {
    const page = await p.newPage();
    const context = page.context();
    await page.goto(p.urls.portal);
    // Without a built front end the proxy says so (and there is no Sign in control to click): the flow is
    // then started at its URL, which is what the control links to.
    const built = !(await page.getByRole('heading', { name: 'Front end not built' }).isVisible());
    if (built) {
      await page.getByRole('link', { name: 'Sign in' }).first().click();
    } else {
      await page.goto(`${p.clinicUrl('demo')}/auth/login?return_to=%2Fportal`);
    }
    // The development provider's page.
    await page.getByLabel('Email').fill('browser-patient@example.com');
    await p.screenshot(page, 'dev-provider-sign-in');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${p.urls.portal}**`);

    const session = await page.evaluate(async () => (await fetch('/auth/session')).json());
    assert.deepEqual(session, { signedIn: true, user: { email: 'browser-patient@example.com' } });
    // The API call rides on the session: the proxy adds the bearer token and the clinic.
    const me: any = await page.evaluate(async () => {
      const res = await fetch('/v1/me');
      return { status: res.status, body: await res.json() };
    });
    assert.equal(me.status, 200, JSON.stringify(me.body));
    assert.equal(me.body.data.email, 'browser-patient@example.com');

    const cookie = (await context.cookies(p.urls.portal)).find((c) => c.name === 'clinic_session');
    assert.ok(cookie, 'the session cookie is set on the clinic host');
    assert.equal(cookie.httpOnly, true);
    assert.equal(cookie.sameSite, 'Lax');
    // Scripts cannot read it.
    assert.doesNotMatch(await page.evaluate<string>('document.cookie'), /clinic_session/);

    if (built) {
      await page.getByRole('button', { name: 'Sign out' }).first().click();
    } else {
      // The same request the Sign out form makes, then wherever it leads (the provider's end-session page).
      const out: any = await page.evaluate(async () => (await fetch('/auth/logout', { method: 'POST' })).json());
      assert.equal(out.signedIn, false);
      await page.goto(out.endSessionUrl ?? '/');
    }
    // The provider's end-session page submits itself and comes back to the clinic.
    await page.waitForURL(`${p.clinicUrl('demo')}/**`);
    const after = await page.evaluate(async () => (await fetch('/auth/session')).json());
    assert.deepEqual(after, { signedIn: false, user: null });

    // The old cookie, replayed by another browser, is refused: the session was destroyed server-side.
    const thief = await p.newContext();
    await thief.addCookies([{ ...cookie }]);
    // (A page, not Playwright's request API: the browser resolves *.localhost to loopback, Node's resolver does not.)
    const thiefPage = await thief.newPage();
    await thiefPage.goto(`${p.clinicUrl('demo')}/auth/session`);
    assert.deepEqual(JSON.parse(await thiefPage.locator('body').innerText()), { signedIn: false, user: null });
    const api = await thiefPage.goto(`${p.clinicUrl('demo')}/v1/me`);
    assert.equal(api?.status(), 401);

    // Signing in again shows the provider's page again (the provider session ended too).
    await page.goto(`${p.clinicUrl('demo')}/auth/login?return_to=%2Fportal`);
    await page.getByLabel('Email').waitFor();
  });
});
