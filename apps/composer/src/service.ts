import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { AssetStore } from '@clinic/assets';
import type { Database } from '@clinic/db';
import { AppError, errors } from '@clinic/http-kit';
import type { Logger } from 'pino';
import { audioKey, loadInventory, videoKey, type Inventory, type Slot } from './assets.ts';
import { DeliveryError, type DeliveryProvider } from './delivery/types.ts';
import type { Tools } from './ffmpeg.ts';
import { createPrimitiveCache } from './primitives.ts';
import * as q from './queries.ts';
import { buildRecipe, recipeHash, type ComposeRequest } from './recipe.ts';
import { renderRecipe } from './render.ts';

export interface ComposerDeps {
  db: Database;
  store: AssetStore;
  delivery: DeliveryProvider;
  tools: Tools;
  logger: Logger;
  cacheDir: string;
  workDir: string;
  inventoryTtlSeconds: number;
  renderTimeoutSeconds: number;
  maxSets: number;
  /** How often a processing video is asked about in the background after its upload. */
  pollIntervalMs: number;
}

export interface ComposeResult {
  row: q.RenderRow;
  exercise: string;
  /** False when an existing render answered (a cache hit, or another request's render). */
  created: boolean;
}

const HEARTBEAT_MS = 10_000;

export function createComposer(d: ComposerDeps) {
  const primitives = createPrimitiveCache(d.store, join(d.cacheDir, 'primitives'), d.tools, { verifyTtlMs: d.inventoryTtlSeconds * 1000 });
  const inventories = new Map<string, { at: number; inv: Promise<Inventory> }>();
  const inflight = new Map<string, Promise<ComposeResult>>();
  const background = new Set<Promise<unknown>>();
  let closed = false;
  // A renderer that stopped heartbeating this long ago has died; its claim may be taken over.
  const staleSeconds = Math.max(30, 3 * (HEARTBEAT_MS / 1000));

  /** Manifest and variant pools, kept for a short time per asset version (a bump is a new key). */
  function inventory(slug: string, version: number): Promise<Inventory> {
    const key = `${slug}@${version}`;
    const hit = inventories.get(key);
    if (hit && Date.now() - hit.at < d.inventoryTtlSeconds * 1000) return hit.inv;
    const inv = loadInventory(d.store, slug);
    inventories.set(key, { at: Date.now(), inv });
    inv.catch(() => inventories.delete(key));
    if (inventories.size > 1000) inventories.delete(inventories.keys().next().value!);
    return inv;
  }

  const warmed = new Set<string>();
  /**
   * After the first render of an exercise version, its other primitives are fetched and probed in
   * the background, one at a time, so that later renders (other seeds pick other variants) find
   * every file local and never wait for a copy or an ffprobe.
   */
  function warm(ex: q.ExerciseRow, inv: Inventory): void {
    const id = `${ex.slug}@${ex.asset_version}`;
    if (warmed.has(id)) return;
    warmed.add(id);
    if (warmed.size > 1000) warmed.delete(warmed.values().next().value!);
    const keys = [
      ...Object.entries(inv.video).flatMap(([slot, ns]) => ns.map((n) => videoKey(ex.slug, slot as Slot, n))),
      ...Object.entries(inv.audio).flatMap(([lang, pool]) =>
        Object.entries(pool).flatMap(([slot, ns]) => ns.map((n) => audioKey(ex.slug, lang, slot as Slot, n))),
      ),
    ];
    track(
      (async () => {
        let failed = 0;
        for (const key of keys) {
          if (closed) return;
          await primitives.get(key, ex.asset_version).catch(() => failed++);
        }
        if (failed)
          d.logger.warn(
            { exercise: ex.slug, asset_version: ex.asset_version, failed },
            'some primitives could not be prepared; they are fetched when a render needs them',
          );
      })(),
    );
  }

  function track<T>(p: Promise<T>): void {
    const t = p.catch((err: Error) => d.logger.warn({ err: err.message }, 'composer background task failed'));
    background.add(t);
    void t.finally(() => background.delete(t));
  }

  /** Asks the provider until the video plays or fails, then records it (the sweep job is the safety net). */
  function followUp(row: q.RenderRow): void {
    track(
      (async () => {
        const deadline = Date.now() + 15 * 60_000;
        while (!closed && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, d.pollIntervalMs));
          const v = await d.delivery.status(row.stream_video_id!);
          if (v.state !== 'processing') {
            await q.asComposer(d.db, (tx) => q.settleProcessing(tx, row.id, v));
            return;
          }
        }
      })(),
    );
  }

  async function render(ex: q.ExerciseRow, row: q.RenderRow, token: string, recipe: ReturnType<typeof buildRecipe>): Promise<q.RenderRow> {
    const label = `${ex.slug}/${row.recipe_hash.slice(0, 12)}/${row.language}/v${ex.asset_version}`;
    const started = Date.now();
    const dir = await mkdtemp(join(d.workDir, 'composer-'));
    const beat = setInterval(() => void q.asComposer(d.db, (tx) => q.heartbeat(tx, row.id, token)).catch(() => undefined), HEARTBEAT_MS);
    try {
      const out = await renderRecipe(recipe, {
        slug: ex.slug,
        assetVersion: ex.asset_version,
        primitives,
        tools: d.tools,
        dir,
        silenceDir: join(d.cacheDir, 'silence'),
        timeoutMs: d.renderTimeoutSeconds * 1000,
        logger: d.logger,
        label,
      });
      const rendered = Date.now();
      const video = await d.delivery.upload(out.file, { name: label.replace(/\//g, '_') });
      const uploaded = Date.now();
      const done = await q.asComposer(d.db, (tx) => q.completeRender(tx, row.id, token, video, out.durationSeconds));
      if (!done) throw new Error('the render claim was taken over by another instance');
      d.logger.info(
        {
          render: label,
          duration_s: out.durationSeconds,
          copied: out.copied,
          render_ms: rendered - started,
          ...out.timings,
          upload_ms: uploaded - rendered,
          complete_ms: Date.now() - uploaded,
          state: video.state,
        },
        'render done',
      );
      if (done.status === 'processing') followUp(done);
      return done;
    } catch (err) {
      d.logger.error({ render: label, err: (err as Error).message }, 'render failed');
      await q.asComposer(d.db, (tx) => q.failRender(tx, row.id, token, (err as Error).message)).catch(() => undefined);
      if (err instanceof DeliveryError) throw new AppError(502, 'delivery_failed', 'The video delivery provider failed; retry later.');
      throw new AppError(500, 'render_failed', 'The video could not be rendered. It has been logged; retry later.');
    } finally {
      clearInterval(beat);
      // The output has been handed over (or the render failed): the folder holds only the concat
      // lists, so it is removed after the answer; close() and idle() wait for it.
      track(rm(dir, { recursive: true, force: true }));
    }
  }

  /** The cache lookup, the claim between instances, and the render when this call holds the claim. */
  async function resolve(
    ex: q.ExerciseRow,
    inv: Inventory,
    language: string,
    recipe: ReturnType<typeof buildRecipe>,
    hash: string,
  ): Promise<ComposeResult> {
    const key = { exerciseId: ex.id, hash, language, assetVersion: ex.asset_version };
    const deadline = Date.now() + d.renderTimeoutSeconds * 1000 * 2;
    for (;;) {
      const token = randomUUID();
      const { row, claimed } = await q.asComposer(d.db, async (tx) => {
        const existing = await q.findRender(tx, key);
        if (existing && (existing.status === 'ready' || existing.status === 'processing')) return { row: existing, claimed: false };
        return q.claimRender(tx, { exercise: ex, hash, language, recipe, token, staleSeconds });
      });
      if (claimed) {
        const rendered = await render(ex, row, token, recipe);
        warm(ex, inv);
        return { row: rendered, exercise: ex.slug, created: true };
      }
      if (row.status === 'ready' || row.status === 'processing') return { row, exercise: ex.slug, created: false };
      // Another instance renders this key: wait for its row to move on, then look again.
      if (Date.now() > deadline)
        throw new AppError(503, 'render_busy', 'The same video is still being rendered; retry shortly.', {
          headers: { 'retry-after': '5' },
        });
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  return {
    /** POST /v1/compose (spec 4.12). Throws AppError with the spec's envelope for bad input. */
    async compose(req: ComposeRequest): Promise<ComposeResult> {
      if (req.sets.length > d.maxSets) throw errors.validation({ sets: `at most ${d.maxSets} sets` });
      const ex = await q.asComposer(d.db, (tx) => q.findExercise(tx, req.exercise));
      if (!ex) throw errors.validation({ exercise: `unknown exercise "${req.exercise}"` });
      if (ex.kind !== 'reps_based')
        throw errors.validation({ exercise: 'a duration-based exercise has no primitives: its video is imported' });
      const inv = await inventory(ex.slug, ex.asset_version);
      const recipe = buildRecipe(req, inv);
      const hash = recipeHash(recipe);
      // Identical requests in this process share one promise; across instances the row's claim decides.
      const key = `${ex.id}|${hash}|${req.language}|${ex.asset_version}`;
      const running = inflight.get(key);
      if (running) return { ...(await running), created: false };
      const p = resolve(ex, inv, req.language, recipe, hash).finally(() => inflight.delete(key));
      inflight.set(key, p);
      return p;
    },

    /** Background follow-ups finished (tests, shutdown). */
    async idle(): Promise<void> {
      while (background.size) await Promise.allSettled([...background]);
    },
    /** Stops following up on uploads (the sweep job picks them up later) and waits for the rest. */
    async close(): Promise<void> {
      closed = true;
      while (background.size) await Promise.allSettled([...background]);
    },
    primitives,
  };
}
export type Composer = ReturnType<typeof createComposer>;
