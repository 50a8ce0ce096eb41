import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { EVENT_CATALOG } from '../src/modules/events/catalog.ts';
import { eventsMarkdown } from '../src/modules/events/doc.ts';
import { startTestApp, type TestApp } from './helpers.ts';

describe('the event catalog is documented in docs/events.md and in the OpenAPI webhooks section', () => {
  let t: TestApp;
  before(async () => (t = await startTestApp()));
  after(async () => t?.close());

  it('docs/events.md is what the catalog generates (run `npm run docs:events` after changing the catalog)', () => {
    const file = readFileSync(new URL('../../../docs/events.md', import.meta.url), 'utf8');
    assert.equal(file, eventsMarkdown());
  });

  it('GET /openapi.json has one webhooks entry per catalog type, with the body and signature headers', async () => {
    const doc = (await t.call('GET', '/openapi.json')).json();
    assert.deepEqual(Object.keys(doc.webhooks).sort(), EVENT_CATALOG.map((e) => e.type).sort());
    const entry = doc.webhooks['organization.updated'].post;
    assert.equal(entry.requestBody.content['application/json'].schema.properties.event.const, 'organization.updated');
    const headers = entry.parameters.map((p: any) => p.name);
    for (const h of ['X-Webhook-Signature', 'X-Webhook-Event', 'webhook-id', 'webhook-timestamp', 'webhook-signature'])
      assert.ok(headers.includes(h), h);
  });
});
