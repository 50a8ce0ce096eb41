import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { request } from 'undici';
import { startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

// The CSV export streams: 100,000 entries leave with flat memory (a generous bound, no timing).

const ROWS = 100_000;
// A collector callable from the test: live memory is what is left after a collection, not the garbage
// a lazy collector has not reclaimed yet.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

describe('audit-log CSV export of 100,000 entries', () => {
  let t: TestApp;
  let org: { id: string };
  let admin: string;
  let base: string;

  before(async () => {
    t = await startTestApp();
    org = await t.createOrg();
    admin = (await t.addMember(org.id, uniqueEmail('admin'), 'admin')).token;
    // In batches: each statement stays under the 5 s statement time-out (spec 8) on a loaded machine.
    for (let from = 1; from <= ROWS; from += 10_000)
      await t.db.query(
        `insert into audit_logs (organization_id, action, entity_type, entity_id, data, created_at)
       select $1, 'bulk.entry', 'thing', app.uuid_v7(), jsonb_build_object('n', g, 'note', repeat('x', 120)), now() - make_interval(secs => g)
       from generate_series($2::int, $2::int + 9999) g`,
        [org.id, from],
      );
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  });
  after(() => t.close());

  it('streams every row while the heap stays flat', async () => {
    gc();
    const baseline = process.memoryUsage().heapUsed;
    let peak = baseline;
    let nextSample = 0;
    const res = await request(`${base}/v1/audit-logs/export?action=bulk.entry`, {
      headers: { authorization: `Bearer ${admin}`, 'x-organization-id': org.id },
    });
    assert.equal(res.statusCode, 200);
    let bytes = 0;
    let newlines = 0;
    for await (const chunk of res.body) {
      bytes += chunk.length;
      for (let i = 0; i < chunk.length; i++) if (chunk[i] === 10) newlines++;
      if (bytes >= nextSample) {
        // Every 2 MB of CSV received: collect, then read the live heap.
        nextSample += 2 * 1024 * 1024;
        gc();
        peak = Math.max(peak, process.memoryUsage().heapUsed);
      }
    }
    const growthMb = (peak - baseline) / 1024 / 1024;
    const csvMb = bytes / 1024 / 1024;
    console.log(`# export: ${newlines - 1} rows, ${csvMb.toFixed(1)} MB of CSV, peak live heap growth ${growthMb.toFixed(1)} MB`);
    assert.equal(newlines, ROWS + 1);
    // Buffered, the live heap would hold at least the whole CSV (36 MB) plus the row objects.
    assert.ok(growthMb < Math.min(32, csvMb / 2), `heap grew ${growthMb.toFixed(1)} MB for ${csvMb.toFixed(1)} MB of CSV`);
  });
});
