import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, migrate, type Database } from '@clinic/db';
import { pino } from 'pino';
import { MIGRATIONS_DIR } from '@clinic/db';
import { buildComposerService, type ComposerService } from '../src/app.ts';
import { parseComposerConfig, type ComposerConfig } from '../src/config.ts';
import type { DeliveryProvider } from '../src/delivery/types.ts';

export const MODE = process.env.TEST_MODE === 'services' ? 'services' : 'embedded';
const ADMIN_URL = MODE === 'services' ? (process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres') : null;

export interface ComposerTest {
  db: Database;
  dbUrl: string | null;
  config: ComposerConfig;
  svc: ComposerService;
  /** The asset store's folder, and the scratch folder holding it and every cache of this file. */
  assetsDir: string;
  scratch: string;
  /** Inserts an exercise row as the owner (the exercise routes are another module's). */
  addExercise(slug: string, opts?: { kind?: 'reps_based' | 'duration_based'; assetVersion?: number }): Promise<string>;
  compose(body: unknown, headers?: Record<string, string>): Promise<{ statusCode: number; body: string; json: () => any }>;
  close(): Promise<void>;
}

/** One database, one scratch folder and one composer per test file; everything is removed at the end. */
export async function startComposerTest(opts: { env?: Record<string, string>; delivery?: DeliveryProvider } = {}): Promise<ComposerTest> {
  const scratch = await mkdtemp(join(tmpdir(), 'composer-test-'));
  const test = await createTestDatabase(ADMIN_URL, process.env.TEST_DB_TEMPLATE);
  await migrate(test.db, MIGRATIONS_DIR);
  const config = parseComposerConfig({
    NODE_ENV: 'test',
    DATA_DIR: join(scratch, 'data'),
    COMPOSER_CACHE_DIR: join(scratch, 'cache'),
    COMPOSER_WORK_DIR: join(scratch, 'work'),
    COMPOSER_INVENTORY_TTL_SECONDS: '0',
    COMPOSER_PUBLIC_URL: 'http://composer.test',
    ...opts.env,
  });
  const { mkdir } = await import('node:fs/promises');
  await mkdir(config.workDir, { recursive: true });
  const logger = pino({ level: process.env.LOG_LEVEL ?? 'silent' });
  const svc = await buildComposerService(config, { db: test.db, logger, ...(opts.delivery ? { delivery: opts.delivery } : {}) });
  return {
    db: test.db,
    dbUrl: test.url,
    config,
    svc,
    assetsDir: config.assetsDir,
    scratch,
    async addExercise(slug, o = {}) {
      const { rows } = await test.db.query<{ id: string }>(
        `insert into exercises (slug, name, kind, status, asset_version) values ($1, $1, $2, 'published', $3) returning id`,
        [slug, o.kind ?? 'reps_based', o.assetVersion ?? 1],
      );
      return rows[0]!.id;
    },
    async compose(body, headers = {}) {
      const payload = typeof body === 'string' ? body : JSON.stringify(body);
      const res = await svc.app.inject({
        method: 'POST',
        url: '/v1/compose',
        payload,
        headers: { 'content-type': 'application/json', ...headers },
      });
      return { statusCode: res.statusCode, body: res.body, json: () => res.json() };
    },
    async close() {
      await svc.close();
      await test.drop();
      await rm(scratch, { recursive: true, force: true });
    },
  };
}
