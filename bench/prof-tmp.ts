import { createTestDatabase } from '@clinic/db';
import { buildApp } from '../apps/core-api/src/app.ts';
import { parseConfig } from '../apps/core-api/src/config.ts';
import { createDevIssuer } from '../apps/core-api/src/platform/auth/dev-issuer.ts';
import { createRuntime } from '../apps/core-api/src/platform/runtime.ts';
import { load, row } from './support.ts';
const testDb = await createTestDatabase('postgres://postgres@127.0.0.1:5432/postgres');
const issuer = await createDevIssuer({ dataDir: null, issuer: 'clinic-platform-dev-issuer', audience: 'clinic-platform' });
const config = parseConfig({
  NODE_ENV: 'test',
  LOG_LEVEL: 'warn',
  REDIS_URL: 'redis://127.0.0.1:6379',
  REDIS_KEY_PREFIX: `bench:${Date.now()}:`,
  RATELIMIT_API_LIMIT: '100000000',
});
const rt = await createRuntime(config, { db: testDb.db, devIssuer: issuer });
const app = await buildApp(rt);
const ours = await app.listen({ port: 0, host: '127.0.0.1' });
const token = await issuer.sign('bench-user@example.com');
const headers = { authorization: `Bearer ${token}` };
await load(`${ours}/v1/me`, headers, 2);
console.log(row('ours', await load(`${ours}/v1/me`, headers, 6)));
await app.close();
await rt.close();
await testDb.drop();
