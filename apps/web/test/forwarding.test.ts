import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { seedDemoClinic } from '../../core-api/src/platform/demo-clinic.ts';
import { Browser, startWebWorld, type WebWorld } from './support.ts';

/** What the screens rely on through the proxy: a booking flow's calls, the hold's event stream, telemetry. */
describe('web proxy: forwarding', () => {
  let w: WebWorld;
  const at = (path: string) => `http://demo.localhost:${w.port}${path}`;
  before(async () => {
    w = await startWebWorld({ coreEnv: { RATELIMIT_PUBLIC_LIMIT: '100000', RATELIMIT_HOLDS_PER_IP: '100000' } });
    await seedDemoClinic(w.t.app, w.t.rt);
  });
  after(() => w?.close());

  it('a hold made through the proxy streams its countdown (server-sent events) through the proxy as it is written', async () => {
    const b = new Browser();
    const services = await b.fetch(at('/v1/public/services'));
    assert.equal(services.status, 200, services.body);
    const service = services.json().data[0];
    const from = new Date(Date.now() + 2 * 86_400_000).toISOString().slice(0, 10);
    const to = new Date(Date.now() + 9 * 86_400_000).toISOString().slice(0, 10);
    const avail = await b.fetch(at(`/v1/public/availability?service_id=${service.id}&from=${from}&to=${to}&time_zone=Europe/Bucharest`));
    assert.equal(avail.status, 200, avail.body);
    const slot = avail.json().data.slots[0];
    assert.ok(slot, 'the demo clinic has slots');
    const orgId = JSON.parse(/"organization":(\{[^}]*\})/.exec((await b.fetch(at('/'))).body)![1]!).id;
    const hold = await b.fetch(at('/v1/public/holds'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ organization: orgId, service_id: service.id, specialist_id: slot.specialist_id, start: slot.start }),
    });
    assert.equal(hold.status, 201, hold.body);
    const id = hold.json().data.id;
    // The stream stays open: read its first event and hang up (the proxy must not wait for the end).
    const controller = new AbortController();
    const res = await request(`http://127.0.0.1:${w.port}/v1/public/holds/${id}/stream`, {
      headers: { host: `demo.localhost:${w.port}`, accept: 'text/event-stream', 'x-hold-secret': hold.json().data.secret },
      signal: controller.signal,
    });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /text\/event-stream/);
    assert.match(String(res.headers['content-security-policy']), /default-src 'self'/);
    assert.equal(res.headers['x-content-type-options'], 'nosniff');
    let text = '';
    for await (const chunk of res.body) {
      text += chunk.toString();
      if (text.includes('\n\n')) break;
    }
    controller.abort();
    assert.match(text, /event: remaining/);
    assert.match(text, /seconds_left/);
  });

  it('/telemetry/v1/... goes to the telemetry service without the prefix', async () => {
    // In this test world TELEMETRY_URL points at the core API: its public system-info answers for the telemetry path.
    const res = await new Browser().fetch(at('/telemetry/v1/public/system-info'));
    assert.equal(res.status, 200, res.body);
    assert.ok(res.json().data);
  });

  it('an upstream that is down is a 502 in the envelope, not a hang or a 500', async () => {
    const { buildWebServer } = await import('../src/index.ts');
    const broken = await buildWebServer({
      config: { ...w.config, port: 0, telemetryUrl: 'http://127.0.0.1:9' },
      logger: w.t.rt.logger as never,
    });
    try {
      const port = Number(new URL(await broken.listen()).port);
      const res = await new Browser().fetch(`http://demo.localhost:${port}/telemetry/v1/media/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      assert.equal(res.status, 502);
      assert.equal(res.json().error.code, 'upstream_unavailable');
    } finally {
      await broken.close();
    }
  });
});
