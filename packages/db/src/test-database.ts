import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { migrate } from './migrate.ts';
import { MIGRATIONS_DIR } from './migrations-dir.ts';
import { openPglite, pgliteImage } from './pglite.ts';
import { openPostgres } from './postgres.ts';
import type { Database } from './types.ts';

export interface TestDatabase {
  db: Database;
  /** Connection string of the fresh database (postgres mode only), for a second instance or raw clients. */
  url: string | null;
  drop(): Promise<void>;
}

/**
 * A migrated database that test databases start from, made once per test run (scripts/run-tests.mjs)
 * and named by a string that travels in the TEST_DB_TEMPLATE environment variable:
 * `pglite:<image file>` or `postgres:<database name>`. Starting from it replaces running every
 * migration in every test file.
 */
export type TestTemplate = string;

/** Migrates a new template: a PGlite image file in `dir`, or a template database on `adminUrl`'s server. */
export async function createTestTemplate(adminUrl: string | null, dir: string): Promise<TestTemplate> {
  if (!adminUrl) {
    const image = await pgliteImage((db) => migrate(db, MIGRATIONS_DIR).then(() => undefined));
    const file = join(dir, 'pglite-template.tar');
    await writeFile(file, Buffer.from(await image.arrayBuffer()));
    return `pglite:${file}`;
  }
  // A Citus database cannot be copied from a template (the cluster keeps connections to it open): each test
  // database of `npm run test:citus` is made and migrated on its own (createTestDatabase).
  if (await citusWorkers(adminUrl)) return 'citus:';
  const name = `clinic_template_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  await adminQuery(adminUrl, `create database ${name}`);
  const db = await openPostgres({ connectionString: databaseUrl(adminUrl, name), max: 1 });
  try {
    await migrate(db, MIGRATIONS_DIR);
  } finally {
    await db.close();
  }
  return `postgres:${name}`;
}

/** Drops a template database; a PGlite image is a file in the run's folder, removed with it. */
export async function dropTestTemplate(adminUrl: string | null, template: TestTemplate): Promise<void> {
  if (adminUrl && template.startsWith('postgres:')) await adminQuery(adminUrl, `drop database if exists ${template.slice(9)} with (force)`);
}

/**
 * The PGlite image of a run, read once per process: every test file's databases share it. PGlite reads
 * the image with `arrayBuffer()` and nothing else of the Blob but its `type`; a real Blob of the 48 MB
 * image is read back in 64 KiB chunks and joined, which took 0.4 s of the 1.4-2 s that a test database
 * costs (profiled), so it gets the bytes already in memory. They are only read: PGlite copies each file
 * of the image into its own file system.
 */
let imageOf: { file: string; blob: Promise<Blob> } | null = null;
function pgliteImageFile(file: string): Promise<Blob> {
  if (imageOf?.file !== file) {
    const image = readFile(file).then((bytes) => {
      const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
      return { type: 'application/x-tar', size: buffer.byteLength, arrayBuffer: async () => buffer } as unknown as Blob;
    });
    imageOf = { file, blob: image };
  }
  return imageOf.blob;
}

/**
 * A fresh database for one test file: PGlite in memory, or a new database on the PostgreSQL server of
 * `adminUrl` that is dropped afterwards. With a template it starts migrated (a copy of it); without
 * one it starts empty. Nothing is shared between test files.
 */
export async function createTestDatabase(adminUrl: string | null, template?: TestTemplate | null): Promise<TestDatabase> {
  if (!adminUrl) {
    const image = template?.startsWith('pglite:') ? await pgliteImageFile(template.slice(7)) : undefined;
    const db = await openPglite(undefined, image ? { loadDataDir: image } : {});
    return { db, url: null, drop: () => db.close() };
  }
  const name = `clinic_test_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  if (template === 'citus:') return createCitusDatabase(adminUrl, name);
  const source = template?.startsWith('postgres:') ? ` template ${template.slice(9)}` : '';
  await adminQuery(adminUrl, `create database ${name}${source}`);
  const url = databaseUrl(adminUrl, name);
  const db = await openPostgres({ connectionString: url, max: 10 });
  return {
    db,
    url,
    drop: async () => {
      await db.close();
      await adminQuery(adminUrl, `drop database if exists ${name} with (force)`);
    },
  };
}

function databaseUrl(adminUrl: string, name: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * One statement on the server's maintenance database. CREATE DATABASE ... TEMPLATE refuses while
 * another session is connected to the template (55006); copies made at the same moment by parallel
 * test files can meet that, so it is tried again a few times.
 */
async function adminQuery(adminUrl: string, sql: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    try {
      await admin.query(sql);
      return;
    } catch (err) {
      if ((err as { code?: string }).code !== '55006' || attempt >= 20) throw err;
    } finally {
      await admin.end();
    }
    await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
  }
}

/**
 * The maintenance URLs of the workers when `adminUrl` is a Citus coordinator (its maintenance database has
 * the extension and workers in pg_dist_node), else null.
 */
async function citusWorkers(adminUrl: string): Promise<string[] | null> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    const has = await admin.query<{ citus: boolean }>("select exists (select 1 from pg_extension where extname = 'citus') as citus");
    if (!has.rows[0]?.citus) return null;
    const nodes = await admin.query<{ host: string; port: number }>(
      "select nodename as host, nodeport as port from pg_dist_node where groupid <> 0 and noderole = 'primary' and isactive order by nodeid",
    );
    if (nodes.rows.length === 0) return null;
    return nodes.rows.map((n) => {
      const url = new URL(adminUrl);
      url.hostname = n.host;
      url.port = String(n.port);
      return url.toString();
    });
  } finally {
    await admin.end();
  }
}

/**
 * A migrated database on a Citus cluster: created on the coordinator and every worker with the extension
 * in each, the workers added, then every migration (0181 distributes the schema). Four shards per table
 * instead of 32 keep a test database's distribution short; placement and routing are the same.
 */
async function createCitusDatabase(adminUrl: string, name: string): Promise<TestDatabase> {
  const workers = (await citusWorkers(adminUrl)) ?? [];
  const nodes = [adminUrl, ...workers];
  for (const node of nodes) {
    await adminQuery(node, `create database ${name}`);
    const db = new pg.Client({ connectionString: databaseUrl(node, name) });
    await db.connect();
    try {
      await db.query('create extension citus');
    } finally {
      await db.end();
    }
  }
  const coordinator = new URL(adminUrl);
  const setup = new pg.Client({ connectionString: databaseUrl(adminUrl, name) });
  await setup.connect();
  try {
    await setup.query('select citus_set_coordinator_host($1, $2)', [coordinator.hostname, Number(coordinator.port || 5432)]);
    for (const worker of workers) {
      const w = new URL(worker);
      await setup.query('select citus_add_node($1, $2)', [w.hostname, Number(w.port || 5432)]);
    }
    await setup.query(`alter database ${name} set citus.shard_count = 4`);
  } finally {
    await setup.end();
  }
  const url = databaseUrl(adminUrl, name);
  const db = await openPostgres({ connectionString: url, max: 10 });
  await migrate(db, MIGRATIONS_DIR);
  return {
    db,
    url,
    drop: async () => {
      await db.close();
      for (const node of nodes) await adminQuery(node, `drop database if exists ${name} with (force)`);
    },
  };
}
