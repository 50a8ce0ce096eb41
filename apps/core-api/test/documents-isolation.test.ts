import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createPdfEngine, RenderError } from '../src/modules/documents/render/engine.ts';
import { resolve } from '../src/modules/documents/render/layout.ts';
import { dataOf, startTestApp, type TestApp } from './helpers.ts';
import { type Clinic, setUpClinic } from './support/appointment-clinic.ts';
import { skipWithoutPoppler } from './support/poppler.ts';

/*
 * The PDF engine under a runaway document: renders are isolated per job in a pool of engine processes, so
 * one clinic's document past the deadline fails alone (another clinic's documents made during and after
 * it are all ready), and a giant document refused by the page bound is laid out in a process of its own
 * that is ended with its memory, leaving the API process where it was.
 */

const skip = skipWithoutPoppler();
// Memory is measured after a full collection: what the API process keeps, not garbage not yet collected.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const LINE = 'Paracetamol 500 mg, de trei ori pe zi după masă, timp de cinci zile; ';
/** About 545 pages: 500 item rows with two of their three columns of some 1,800 characters (a 2 MB request). */
const giantItems = (seed: string) =>
  Array.from({ length: 500 }, (_, i) => ({
    drug: `${seed} ${i} ${LINE.repeat(28)}`.slice(0, 1800),
    dose: LINE.repeat(28).slice(0, 1800),
  }));
/** The answer of a request that sends a giant body (its body kept short in a failure's message). */
const brief = (res: { statusCode: number; body: string; json(): any }, status: number) => {
  assert.equal(res.statusCode, status, res.body.slice(0, 300));
  return res.json().data;
};
const prescription = {
  blocks: [
    { type: 'text', text: '{{document.body}}' },
    {
      type: 'items',
      columns: [
        { key: 'drug', label: 'Medication' },
        { key: 'dose', label: 'Dose' },
        { key: 'note', label: 'Note' },
      ],
    },
  ],
};

describe('document render isolation', { skip }, () => {
  let t: TestApp;
  let a: Clinic;
  let b: Clinic;
  let aTemplate: string;
  let bTemplate: string;

  before(async () => {
    t = await startTestApp({
      env: {
        // Small enough that the giant document always passes it, large enough for a one-page one many times over.
        DOCUMENT_RENDER_TIMEOUT_MS: '500',
        DOCUMENT_MAX_PAGES: '2000',
        DOCUMENT_INLINE_MAX_ROWS: '1000',
        DOCUMENT_RENDER_WORKERS: '2',
        BODY_LIMIT_BYTES: String(4 * 1024 * 1024),
      },
    });
    a = await setUpClinic(t, 'runaway');
    b = await setUpClinic(t, 'steady');
    const template = async (k: Clinic) =>
      dataOf(await k.call('POST', '/v1/pdf-templates', k.admin, { name: 'Rețetă', kind: 'prescription', layout: prescription }), 201).id;
    aTemplate = await template(a);
    bTemplate = await template(b);
  });
  after(() => t.close());

  it("one clinic's document past the deadline fails alone: another clinic's documents made during and after it are ready", async () => {
    const aVisit = await a.book();
    const bVisit = await b.book();
    const runaway = a.call('POST', `/v1/appointments/${aVisit.id}/documents`, a.admin, {
      pdf_template_id: aTemplate,
      // All three columns full: some 3 s of layout, several times the deadline.
      items: giantItems('a').map((it) => ({ ...it, note: it.dose })),
    });
    // Once A's row is committed its layout is under way (it renders inline right after): B's documents go now.
    for (let i = 0; i < 500; i++) {
      const n = await t.db.query<{ n: number }>('select count(*)::int as n from documents where organization_id = $1', [a.org.id]);
      if (n.rows[0]!.n > 0) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    const made = async (text: string) =>
      dataOf(
        await b.call('POST', `/v1/appointments/${bVisit.id}/documents`, b.admin, { pdf_template_id: bTemplate, body: text, items: [] }),
        201,
      );
    const during = await Promise.all([made('during 1'), made('during 2'), made('during 3')]);
    const failed = brief(await runaway, 201);
    assert.equal(failed.status, 'failed');
    assert.match(failed.error, /longer than 500 ms/);
    const afterwards = [await made('after 1'), await made('after 2')];
    for (const d of [...during, ...afterwards]) assert.equal(d.status, 'ready', JSON.stringify(d));
  });
});

/** The prescription layout resolved with these item rows (the render core, without HTTP). */
const doc = (items: Record<string, string>[]) =>
  resolve({ page: { size: 'A4', orientation: 'portrait' }, letterhead: false, footer: '', blocks: prescription.blocks as never }, 'T', {
    values: { 'document.body': 'x' },
    lang: 'ro',
    author: '',
    answers: [],
    items,
    signature: [],
    letterhead: null,
  });

describe('the engine pool', { skip }, () => {
  it('lays a document out again on another process, transparently, when its process is killed under it', async () => {
    const engine = createPdfEngine({ maxPages: 2000, timeoutMs: 120_000, workers: 1 });
    try {
      const rendering = engine.render(doc(giantItems('killed')));
      let busy: { pid: number } | undefined;
      for (let i = 0; i < 2000 && !busy; i++) {
        busy = engine.processes().find((p) => p.busy);
        if (!busy) await new Promise((r) => setTimeout(r, 5));
      }
      assert.ok(busy, 'a process took the document');
      // Not its own deadline: what a neighbour's runaway, the OOM killer or an operator would do.
      process.kill(busy.pid, 'SIGKILL');
      const out = await rendering;
      assert.ok(out.pages > 500, `pages: ${out.pages}`);
      assert.ok(!engine.processes().some((p) => p.pid === busy.pid));
    } finally {
      await engine.close();
    }
  });
});

describe('a giant document refused by the page bound', { skip }, () => {
  it('is laid out in an engine process, not the API process, which is ended after the refusal', async () => {
    const engine = createPdfEngine({ maxPages: 200, timeoutMs: 120_000, workers: 1 });
    const small = doc([]);
    try {
      await engine.render(small);
      const [pid] = engine.processes().map((p) => p.pid);
      assert.ok(pid && pid !== process.pid, 'the layout runs in a process of its own');
      const giant = doc(giantItems('g'));
      await assert.rejects(
        engine.render(giant),
        (e: unknown) => e instanceof RenderError && e.reason === 'too_long' && (e.pages ?? 0) > 500,
      );
      assert.ok(
        !engine.processes().some((p) => p.pid === pid),
        'the process that laid the refused document out is gone, and its memory with it',
      );
      const alive = () => {
        try {
          process.kill(pid, 0);
          return true;
        } catch {
          return false;
        }
      };
      // Killed at once; gone once the system has reaped it.
      for (let i = 0; i < 500 && alive(); i++) await new Promise((r) => setTimeout(r, 10));
      assert.equal(alive(), false, 'the engine process that refused the document has exited');
      // The next document gets a fresh process.
      assert.equal((await engine.render(small)).pages, 1);
      // A document whose text alone could not fit is refused before any layout: that process stays.
      const tight = createPdfEngine({ maxPages: 5, timeoutMs: 120_000, workers: 1 });
      try {
        await tight.render(small);
        const [stays] = tight.processes().map((p) => p.pid);
        await assert.rejects(tight.render(doc(giantItems('t').slice(0, 20))), (e: unknown) => {
          assert.ok(e instanceof RenderError && e.reason === 'too_long', String(e));
          assert.match(e.message, /text fills at least \d+ pages; at most 5/);
          return true;
        });
        assert.deepEqual(
          tight.processes().map((p) => p.pid),
          [stays],
        );
      } finally {
        await tight.close();
      }
    } finally {
      await engine.close();
    }
  });

  it('five refusals of a ~545-page document through the API leave its resident memory where it was (< 50 MB)', async () => {
    const w = await startTestApp({
      env: {
        DOCUMENT_MAX_PAGES: '200',
        DOCUMENT_INLINE_MAX_ROWS: '1000',
        DOCUMENT_RENDER_WORKERS: '1',
        BODY_LIMIT_BYTES: String(4 * 1024 * 1024),
      },
    });
    try {
      const k = await setUpClinic(w, 'giant');
      const tpl = dataOf(
        await k.call('POST', '/v1/pdf-templates', k.admin, { name: 'Big', kind: 'prescription', layout: prescription }),
        201,
      ).id;
      const visit = await k.book();
      // Each one different (another document, another layout: no cache of the engine's can serve it).
      const refuse = async (seed: string) => {
        const res = await k.call('POST', `/v1/appointments/${visit.id}/documents`, k.admin, {
          pdf_template_id: tpl,
          items: giantItems(seed),
        });
        const d = brief(res, 201);
        assert.equal(d.status, 'failed', res.body.slice(0, 500));
        assert.match(d.error, /would have (5\d\d) pages; at most 200/);
      };
      await refuse('warm-up'); // the first one pays for what any first request pays (code, caches, the database's buffers)
      gc();
      const before = process.memoryUsage().rss;
      for (let i = 0; i < 5; i++) {
        await refuse(`giant ${i}`);
        gc(); // after each: garbage of one 2 MB request must not add up to a false growth
      }
      gc();
      const growth = process.memoryUsage().rss - before;
      assert.ok(growth < 50 * 1024 * 1024, `the API process grew by ${Math.round(growth / 1048576)} MB`);
    } finally {
      await w.close();
    }
  });
});
