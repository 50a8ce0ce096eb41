import { randomBytes } from 'node:crypto';
import { type Fixture, type Fragment, superadminOnly } from './types.ts';

/* Operator surface (spec 2.11, 4.10): superadmin only. */
const su = superadminOnly;
const BASE = '/v1/admin/platform-service-providers';
const emailRow = async (f: Fixture) => ((await f.setup('GET', `${BASE}?capability=email`)) as Array<{ id: string }>)[0]!.id;
const emailBody = () => ({
  credentials: { access_key_id: 'AKIAMATRIXKEY0000001', secret_access_key: 'matrix-secret-0123456789' },
  config: {
    region: 'eu-central-1',
    from_address: 'noreply@matrix.test',
    configuration_set: `m${randomBytes(3).toString('hex')}`,
    endpoint_url: '',
  },
});

export const entries: Fragment = {
  listPlatformServiceProviders: { row: su(200), request: { method: 'GET', path: BASE } },
  resolvePlatformServiceProvider: {
    row: su(200),
    request: { method: 'GET', path: `${BASE}/resolve`, prepare: () => ({ query: 'capability=storage' }) },
  },
  getPlatformServiceProvider: {
    row: su(200),
    request: { method: 'GET', path: `${BASE}/{id}`, prepare: async (f) => ({ params: { id: await emailRow(f) } }) },
  },
  checkPlatformServiceProvider: {
    row: su(200),
    request: { method: 'POST', path: `${BASE}/{id}/check`, prepare: async (f) => ({ params: { id: await emailRow(f) } }) },
  },
  updatePlatformServiceProvider: {
    row: su(200),
    request: { method: 'PATCH', path: `${BASE}/{id}`, prepare: async (f) => ({ params: { id: await emailRow(f) }, body: emailBody() }) },
  },
  createPlatformServiceProvider: {
    row: su(201),
    request: {
      method: 'POST',
      path: BASE,
      prepare: async (f) => {
        const org = await f.setup('POST', '/v1/organizations', {
          name: 'Matrix override',
          slug: `matrix-${randomBytes(5).toString('hex')}`,
        });
        return { body: { capability: 'email', organization_id: org.id, ...emailBody() } };
      },
    },
  },
};
