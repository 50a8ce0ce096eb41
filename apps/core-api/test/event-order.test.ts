import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { DomainEvent } from '../src/worker/types.ts';
import { insertDeliveries } from '../src/modules/webhooks/queries.ts';
import { dispatchPending } from '../src/worker/dispatcher.ts';
import { startTestApp, type TestApp } from './helpers.ts';

/*
 * Events keep the order they were emitted in: many events emitted in one transaction (all in the same
 * millisecond or few, sharing occurred_at) are claimed by the dispatcher, turned into webhook deliveries and
 * carry ids in that order, on PGlite (whose clock ticks in milliseconds) as on PostgreSQL.
 */
describe('event order within a transaction', () => {
  let t: TestApp;
  let orgId: string;
  before(async () => {
    t = await startTestApp();
    orgId = (await t.createOrg({ name: 'Ordered clinic' })).id;
  });
  after(async () => t?.close());

  it('ids made in one statement or one transaction are strictly increasing', async () => {
    const { rows } = await t.db.query<{ id: string }>('select app.uuid_v7()::text as id from generate_series(1, 5000)');
    for (let i = 1; i < rows.length; i++) assert.ok(rows[i - 1]!.id < rows[i]!.id, `id ${i} is not after id ${i - 1}`);
    for (const r of rows) assert.match(r.id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('the dispatcher and the webhook deliveries see the events of one transaction in emit order', async () => {
    const n = 400;
    const emitted = await t.db.transaction(async (tx) => {
      const ids: string[] = [];
      for (let i = 0; i < n; i++) {
        const { rows } = await tx.query<{ id: string }>(`select app.emit_event($1, 'organization.updated', $2) as id`, [
          orgId,
          JSON.stringify({ changed: ['name'], n: i }),
        ]);
        ids.push(rows[0]!.id);
      }
      return ids;
    });
    const sub = await t.db.query<{ id: string }>(
      `insert into webhook_subscriptions (organization_id, url, event_types, secret_sealed)
       values ($1, 'https://receiver.example/hook', '{organization.updated}', 'x') returning id`,
      [orgId],
    );
    const claimed: DomainEvent[] = [];
    let result = { events: 0 };
    do {
      result = await dispatchPending({
        db: t.db,
        internalTypes: () => new Set(),
        fanOuts: [
          async (tx, events) => {
            const ours = events.filter((e) => e.organization_id === orgId);
            claimed.push(...ours);
            await insertDeliveries(tx, ours);
            return [];
          },
        ],
        insertJobs: async () => {},
        batchSize: 150,
      });
    } while (result.events > 0);
    assert.deepEqual(
      claimed.map((e) => (e.data as { n: number }).n),
      Array.from({ length: n }, (_, i) => i),
      'claimed in emit order',
    );
    assert.deepEqual(
      claimed.map((e) => e.id),
      emitted,
    );
    assert.deepEqual([...emitted].sort(), emitted, 'the ids a consumer receives sort in emit order');
    const deliveries = await t.db.query<{ n: number }>(
      `select (e.data->>'n')::int as n from webhook_deliveries d join domain_events e on e.id = d.event_id
       where d.subscription_id = $1 order by d.id`,
      [sub.rows[0]!.id],
    );
    assert.deepEqual(
      deliveries.rows.map((r) => r.n),
      Array.from({ length: n }, (_, i) => i),
      'deliveries made in emit order',
    );
  });
});
