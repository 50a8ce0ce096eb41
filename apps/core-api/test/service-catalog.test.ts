import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { assertError, dataOf, MISSING_UUID, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

/*
 * The service catalog (spec 4.5 "Service catalog"): services, products, service plans
 * and the products of a plan, under X-Organization-ID. Reads: services.view_org or services.manage, and
 * the organization's patients for public services and plans (never products); writes: services.manage.
 * Money is an integer of minor units beside an ISO 4217 code.
 */
describe('service catalog', () => {
  let t: TestApp;
  let org: string;
  let otherOrg: string;
  // Bearer tokens (this organization's staff and patient, another organization's admin, a signed-in
  // outsider) and fixtures (a specialist, a location here and one of the other organization).
  const who = { admin: '', otherAdmin: '', specialist: '', support: '', patient: '', outsider: '' };
  const fx = { specialist: '', location: '', otherLocation: '' };

  const hex = () => randomBytes(4).toString('hex');
  const call = (method: string, url: string, token: string, body?: unknown, at = org) => t.call(method, url, { token, org: at, body });
  /** A valid create body of each resource, with `extra` on top. */
  const bodyOf = (path: string, extra: Record<string, unknown> = {}) => ({
    ...{
      '/v1/services': { name: `Service ${hex()}`, duration_minutes: 30, price_minor: 15000, currency: 'RON', mode: 'in_person' },
      '/v1/products': { name: `Brace ${hex()}`, sku: `br-${hex()}`, price_minor: 9900, currency: 'eur' },
      '/v1/service-plans': { name: `Plan ${hex()}`, price_minor: 100000, currency: 'RON', validity_days: 90 },
    }[path],
    ...extra,
  });
  const creator =
    (path: string) =>
    async (extra: Record<string, unknown> = {}, token = who.admin, at = org) =>
      dataOf(await call('POST', path, token, bodyOf(path, extra), at), 201);
  const service = creator('/v1/services');
  const product = creator('/v1/products');
  const plan = creator('/v1/service-plans');
  async function auditOf(entityId: string) {
    const { rows } = await t.db.query<{ action: string; entity_type: string; organization_id: string; data: any }>(
      'select action, entity_type, organization_id, data from audit_logs where entity_id = $1 order by created_at, id',
      [entityId],
    );
    return rows;
  }
  async function eventsOf(entityId: string) {
    const { rows } = await t.db.query<{ type: string; data: any }>(
      `select type, data from domain_events where organization_id = $1 and data->>'id' = $2 order by occurred_at, id`,
      [org, entityId],
    );
    return rows;
  }

  before(async () => {
    t = await startTestApp();
    org = (await t.createOrg({ name: 'Catalog clinic' })).id;
    otherOrg = (await t.createOrg({ name: 'Catalog other' })).id;
    who.admin = (await t.addMember(org, uniqueEmail('cat-admin'), 'admin')).token;
    who.otherAdmin = (await t.addMember(otherOrg, uniqueEmail('cat-other'), 'admin')).token;
    who.support = (await t.addMember(org, uniqueEmail('cat-support'), 'customer_support')).token;
    who.patient = (await t.addPatient(org, uniqueEmail('cat-patient'))).token;
    // Signed in once without an organization: a first request naming one would link it as a patient (spec 5.4).
    who.outsider = await t.token(uniqueEmail('cat-outsider'));
    assert.equal((await t.call('GET', '/v1/me', { token: who.outsider })).statusCode, 200);
    const member = await t.addMember(org, uniqueEmail('cat-spec'), 'specialist');
    who.specialist = member.token;
    fx.specialist = dataOf(await call('POST', '/v1/specialists', who.admin, { user_id: member.userId, display_name: 'Dr Ana' }), 201).id;
    const loc = async (token: string, at: string) =>
      dataOf(
        await t.call('POST', `/v1/organizations/${at}/locations`, { token, body: { name: `Main ${hex()}`, timezone: 'Europe/Bucharest' } }),
        201,
      ).id;
    fx.location = await loc(who.admin, org);
    fx.otherLocation = await loc(who.otherAdmin, otherOrg);
  });
  after(() => t?.close());

  describe('services', () => {
    it('creates, reads, lists, patches and deletes a service; each change audited and emitted with field names only', async () => {
      const created = await service({
        name: '  Physiotherapy session ',
        description: 'Manual therapy',
        currency: 'ron',
        buffer_after_minutes: 10,
        location_ids: [fx.location],
        specialist_ids: [fx.specialist],
        is_public: true,
      });
      assert.equal(created.name, 'Physiotherapy session');
      assert.equal(created.currency, 'RON');
      assert.equal(created.price_minor, 15000);
      assert.equal(created.organization_id, org);
      assert.equal(created.buffer_before_minutes, 0);
      assert.equal(created.buffer_after_minutes, 10);
      assert.equal(created.max_days_ahead, 90);
      assert.deepEqual(created.location_ids, [fx.location]);
      assert.deepEqual(created.specialist_ids, [fx.specialist]);
      assert.deepEqual(dataOf(await call('GET', `/v1/services/${created.id}`, who.admin)), created);

      const patched = dataOf(
        await call('PATCH', `/v1/services/${created.id}`, who.admin, { price_minor: 17500, location_ids: [], mode: 'video' }),
      );
      assert.equal(patched.price_minor, 17500);
      assert.equal(patched.mode, 'video');
      assert.deepEqual(patched.location_ids, []);
      assert.deepEqual(patched.specialist_ids, [fx.specialist], 'a link set not given stays');
      assert.equal(patched.name, created.name);
      // The same values again change nothing and write nothing.
      assert.deepEqual(
        dataOf(await call('PATCH', `/v1/services/${created.id}`, who.admin, { price_minor: 17500, location_ids: [] })),
        patched,
      );

      const res = await call('DELETE', `/v1/services/${created.id}`, who.admin);
      assert.equal(res.statusCode, 204, res.body);
      assertError(await call('GET', `/v1/services/${created.id}`, who.admin), 404, 'not_found');
      assertError(await call('DELETE', `/v1/services/${created.id}`, who.admin), 404, 'not_found');

      const audit = await auditOf(created.id);
      assert.deepEqual(
        audit.map((r) => r.action),
        ['service.created', 'service.updated', 'service.deleted'],
      );
      assert.equal(audit[0]!.entity_type, 'service');
      assert.equal(audit[0]!.organization_id, org);
      assert.equal(audit[0]!.data.price_minor, 15000);
      assert.deepEqual(audit[1]!.data.fields.sort(), ['location_ids', 'mode', 'price_minor']);
      assert.deepEqual(audit[1]!.data.changes.price_minor, { from: 15000, to: 17500 });
      const events = await eventsOf(created.id);
      assert.deepEqual(
        events.map((e) => e.type),
        ['service.created', 'service.updated', 'service.deleted'],
      );
      assert.deepEqual(events[1]!.data.changed.sort(), ['location_ids', 'mode', 'price_minor']);
      for (const e of events) assert.equal(JSON.stringify(e.data).includes('Physiotherapy'), false, 'no free text in events');
    });

    it('bad money, ranges and modes are 400 validation_error with fields, and create nothing', async () => {
      const base = { name: `Bad ${hex()}`, duration_minutes: 30, price_minor: 100, currency: 'RON', mode: 'phone' };
      const cases: [Record<string, unknown>, string][] = [
        [{ currency: 'XYZ' }, 'currency'],
        [{ currency: 'R0N' }, 'currency'],
        [{ currency: 'EURO' }, 'currency'],
        [{ price_minor: -1 }, 'price_minor'],
        [{ price_minor: 12.5 }, 'price_minor'],
        [{ price_minor: '100' }, 'price_minor'],
        [{ price_minor: 2_147_483_648 }, 'price_minor'],
        [{ duration_minutes: 4 }, 'duration_minutes'],
        [{ duration_minutes: 1441 }, 'duration_minutes'],
        [{ buffer_before_minutes: 241 }, 'buffer_before_minutes'],
        [{ mode: 'carrier_pigeon' }, 'mode'],
        [{ name: '   ' }, 'name'],
      ];
      for (const [extra, field] of cases) {
        const res = await call('POST', '/v1/services', who.admin, { ...base, ...extra });
        assertError(res, 400, 'validation_error');
        assert.ok(
          Object.keys(res.json().error.fields).some((k) => k.includes(field)),
          `${JSON.stringify(extra)}: ${res.body}`,
        );
      }
      const s = await service();
      assertError(await call('PATCH', `/v1/services/${s.id}`, who.admin, { currency: 'ABC' }), 400, 'validation_error');
      assertError(await call('PATCH', `/v1/services/${s.id}`, who.admin, {}), 400, 'validation_error');
      assert.equal(dataOf(await call('GET', `/v1/services?q=${encodeURIComponent(base.name)}`, who.admin)).length, 0);
    });

    it('links must name the organization: unknown, deleted or cross-organization ids are 400 with the field', async () => {
      const cases: [Record<string, unknown>, string][] = [
        [{ location_ids: [MISSING_UUID] }, 'location_ids'],
        [{ location_ids: [fx.otherLocation] }, 'location_ids'],
        [{ specialist_ids: [MISSING_UUID] }, 'specialist_ids'],
      ];
      const gone = await t.addMember(org, uniqueEmail('cat-gone'), 'specialist');
      const goneId = dataOf(await call('POST', '/v1/specialists', who.admin, { user_id: gone.userId, display_name: 'Dr Gone' }), 201).id;
      assert.equal((await call('DELETE', `/v1/specialists/${goneId}`, who.admin)).statusCode, 204);
      cases.push([{ specialist_ids: [goneId] }, 'specialist_ids']);
      for (const [extra, field] of cases) {
        const res = await call('POST', '/v1/services', who.admin, {
          name: `Linked ${hex()}`,
          duration_minutes: 30,
          price_minor: 0,
          currency: 'RON',
          mode: 'in_person',
          ...extra,
        });
        assertError(res, 400, 'validation_error');
        assert.ok(res.json().error.fields[field], res.body);
      }
      const s = await service({ location_ids: [fx.location] });
      assertError(await call('PATCH', `/v1/services/${s.id}`, who.admin, { location_ids: [fx.otherLocation] }), 400, 'validation_error');
      assert.deepEqual(dataOf(await call('GET', `/v1/services/${s.id}`, who.admin)).location_ids, [fx.location], 'nothing changed');
      // A location in use by a service is not deleted (the link restricts).
      assertError(
        await t.call('DELETE', `/v1/organizations/${org}/locations/${fx.location}`, { token: who.admin }),
        409,
        'location_in_use',
      );
    });

    it('a name is unique in the organization whatever its case (409 service_name_taken); another organization may reuse it', async () => {
      const s = await service();
      assertError(
        await call('POST', '/v1/services', who.admin, {
          name: s.name.toUpperCase(),
          duration_minutes: 30,
          price_minor: 0,
          currency: 'RON',
          mode: 'video',
        }),
        409,
        'service_name_taken',
      );
      const second = await service();
      assertError(await call('PATCH', `/v1/services/${second.id}`, who.admin, { name: s.name }), 409, 'service_name_taken');
      assert.equal((await service({ name: s.name }, who.otherAdmin, otherOrg)).name, s.name);
    });

    it('lists with q, sort, filters and pagination; an unknown sort field is 422', async () => {
      const tag = hex();
      const a = await service({ name: `Alpha ${tag}`, price_minor: 300, duration_minutes: 60, mode: 'video', is_public: true });
      const b = await service({ name: `beta ${tag}`, price_minor: 100, location_ids: [fx.location], specialist_ids: [fx.specialist] });
      const c = await service({ name: `Gamma ${tag}`, price_minor: 200, mode: 'phone', location_ids: [fx.location] });
      const names = async (query: string) => {
        const res = await call('GET', `/v1/services?q=${tag}&${query}`, who.admin);
        assert.equal(res.statusCode, 200, res.body);
        return res.json().data.map((s: any) => s.name);
      };
      assert.deepEqual(await names('sort=name'), [a.name, b.name, c.name]);
      assert.deepEqual(await names('sort=-price_minor'), [a.name, c.name, b.name]);
      assert.deepEqual(await names('sort=-duration_minutes,name'), [a.name, b.name, c.name]);
      assert.deepEqual(await names(''), [c.name, b.name, a.name], 'newest first by default');
      assert.deepEqual(await names('mode=video'), [a.name]);
      assert.deepEqual(await names(`location_id=${fx.location}&sort=name`), [b.name, c.name]);
      assert.deepEqual(await names(`specialist_id=${fx.specialist}`), [b.name]);
      assert.deepEqual(await names('is_public=true'), [a.name]);
      assert.deepEqual(await names('is_public=false&sort=name'), [b.name, c.name]);
      assert.deepEqual(await names('created_at_after=2000-01-01&created_at_before=2000-12-31'), []);
      const page = (await call('GET', `/v1/services?q=${tag}&sort=name&limit=2&page=2`, who.admin)).json();
      assert.deepEqual(
        page.data.map((s: any) => s.name),
        [c.name],
      );
      assert.deepEqual(page.pagination, { page: 2, limit: 2, total: 3 });
      assertError(await call('GET', '/v1/services?sort=description', who.admin), 422, 'validation_failed');
      assertError(await call('GET', '/v1/services?created_at_after=yesterday', who.admin), 422, 'validation_failed');
    });

    it('honours Idempotency-Key: a replay returns the first answer and creates nothing', async () => {
      const body = { name: `Idem ${hex()}`, duration_minutes: 45, price_minor: 5000, currency: 'USD', mode: 'phone' };
      const headers = { 'idempotency-key': `svc-${hex()}${hex()}` };
      const first = await t.call('POST', '/v1/services', { token: who.admin, org, body, headers });
      assert.equal(first.statusCode, 201, first.body);
      const second = await t.call('POST', '/v1/services', { token: who.admin, org, body, headers });
      assert.equal(second.statusCode, 201);
      assert.equal(second.body, first.body);
      assert.equal(second.headers['idempotency-replayed'], 'true');
      const { rows } = await t.db.query<{ n: number }>('select count(*)::int as n from services where name = $1', [body.name]);
      assert.equal(rows[0]!.n, 1);
    });
  });

  describe('products', () => {
    it('creates with an upper-case SKU, reads, lists, patches and deletes; audited and emitted', async () => {
      const p = await product({ sku: ' brace-m.01 ', description: 'Knee brace' });
      assert.equal(p.sku, 'BRACE-M.01');
      assert.equal(p.currency, 'EUR');
      assert.deepEqual(dataOf(await call('GET', `/v1/products/${p.id}`, who.support)), p);
      const patched = dataOf(await call('PATCH', `/v1/products/${p.id}`, who.admin, { price_minor: 12000, description: '' }));
      assert.equal(patched.price_minor, 12000);
      assert.equal(patched.description, null);
      const listed = (await call('GET', '/v1/products?q=brace-m.01', who.admin)).json();
      assert.deepEqual(
        listed.data.map((x: any) => x.id),
        [p.id],
      );
      assertError(await call('GET', '/v1/products?sort=currency', who.admin), 422, 'validation_failed');
      assert.equal((await call('DELETE', `/v1/products/${p.id}`, who.admin)).statusCode, 204);
      assert.deepEqual(
        (await auditOf(p.id)).map((r) => r.action),
        ['product.created', 'product.updated', 'product.deleted'],
      );
      const events = await eventsOf(p.id);
      assert.deepEqual(
        events.map((e) => e.type),
        ['product.created', 'product.updated', 'product.deleted'],
      );
      assert.deepEqual(events[1]!.data.changed.sort(), ['description', 'price_minor']);
    });

    it('a SKU is unique in the organization whatever its case (409 product_sku_taken); bad SKUs and money are 400', async () => {
      const p = await product();
      assertError(
        await call('POST', '/v1/products', who.admin, { name: 'Other', sku: p.sku.toLowerCase(), price_minor: 1, currency: 'EUR' }),
        409,
        'product_sku_taken',
      );
      const second = await product();
      assertError(await call('PATCH', `/v1/products/${second.id}`, who.admin, { sku: p.sku }), 409, 'product_sku_taken');
      for (const extra of [{ sku: '-lead' }, { sku: 'has space' }, { currency: 'ZZZ' }, { price_minor: 0.5 }, { price_minor: -3 }]) {
        const res = await call('POST', '/v1/products', who.admin, {
          name: 'Bad',
          sku: `ok-${hex()}`,
          price_minor: 1,
          currency: 'EUR',
          ...extra,
        });
        assertError(res, 400, 'validation_error');
        assert.ok(res.json().error.fields[Object.keys(extra)[0]!], res.body);
      }
    });
  });

  describe('service plans', () => {
    it('bundles services with quantities and products; patch replaces services; in-use deletes are 409', async () => {
      const s1 = await service();
      const s2 = await service();
      const created = await plan({ services: [{ service_id: s1.id, quantity: 10 }], description: 'Ten sessions', is_public: true });
      assert.deepEqual(created.services, [{ service_id: s1.id, quantity: 10 }]);
      assert.deepEqual(created.products, []);
      assert.equal(created.validity_days, 90);

      const patched = dataOf(
        await call('PATCH', `/v1/service-plans/${created.id}`, who.admin, {
          services: [
            { service_id: s2.id, quantity: 2 },
            { service_id: s1.id, quantity: 8 },
          ],
        }),
      );
      assert.deepEqual(
        patched.services,
        [
          { service_id: s1.id, quantity: 8 },
          { service_id: s2.id, quantity: 2 },
        ].sort((a, b) => (a.service_id < b.service_id ? -1 : 1)),
      );
      assertError(await call('DELETE', `/v1/services/${s1.id}`, who.admin), 409, 'service_in_use');

      // Products of the plan.
      const p = await product();
      const added = await call('POST', `/v1/service-plans/${created.id}/products`, who.admin, { product_id: p.id, quantity: 1 });
      assert.equal(added.statusCode, 201, added.body);
      assert.deepEqual(
        { ...added.json().data, created_at: undefined },
        {
          product_id: p.id,
          name: p.name,
          sku: p.sku,
          price_minor: p.price_minor,
          currency: p.currency,
          quantity: 1,
          created_at: undefined,
        },
      );
      assertError(
        await call('POST', `/v1/service-plans/${created.id}/products`, who.admin, { product_id: p.id }),
        409,
        'product_already_in_plan',
      );
      assertError(await call('DELETE', `/v1/products/${p.id}`, who.admin), 409, 'product_in_use');
      const updated = dataOf(await call('PATCH', `/v1/service-plans/${created.id}/products/${p.id}`, who.admin, { quantity: 2 }));
      assert.equal(updated.quantity, 2);
      const listed = (await call('GET', `/v1/service-plans/${created.id}/products`, who.support)).json();
      assert.deepEqual(
        listed.data.map((x: any) => [x.sku, x.quantity]),
        [[p.sku, 2]],
      );
      assert.equal(listed.pagination.total, 1);
      assert.deepEqual(dataOf(await call('GET', `/v1/service-plans/${created.id}`, who.admin)).products, [
        { product_id: p.id, quantity: 2 },
      ]);
      assert.equal((await call('DELETE', `/v1/service-plans/${created.id}/products/${p.id}`, who.admin)).statusCode, 204);
      assertError(await call('DELETE', `/v1/service-plans/${created.id}/products/${p.id}`, who.admin), 404, 'not_found');
      assertError(await call('PATCH', `/v1/service-plans/${created.id}/products/${p.id}`, who.admin, { quantity: 3 }), 404, 'not_found');
      assert.equal((await call('DELETE', `/v1/products/${p.id}`, who.admin)).statusCode, 204, 'no longer in use');

      assert.equal((await call('DELETE', `/v1/service-plans/${created.id}`, who.admin)).statusCode, 204);
      assert.equal((await call('DELETE', `/v1/services/${s1.id}`, who.admin)).statusCode, 204, 'the plan is gone, so is the use');
      assert.deepEqual(
        (await auditOf(created.id)).map((r) => r.action),
        [
          'service_plan.created',
          'service_plan.updated',
          'service_plan.product_added',
          'service_plan.product_updated',
          'service_plan.product_removed',
          'service_plan.deleted',
        ],
      );
      const events = await eventsOf(created.id);
      assert.deepEqual(
        events.map((e) => [e.type, e.data.changed ?? null]),
        [
          ['service_plan.created', null],
          ['service_plan.updated', ['services']],
          ['service_plan.updated', ['products']],
          ['service_plan.updated', ['products']],
          ['service_plan.updated', ['products']],
          ['service_plan.deleted', null],
        ],
      );
    });

    it('refuses unknown or cross-organization services and products, duplicates, bad quantities; 409 service_plan_name_taken', async () => {
      const theirs = await service({}, who.otherAdmin, otherOrg);
      for (const services of [[{ service_id: MISSING_UUID, quantity: 1 }], [{ service_id: theirs.id, quantity: 1 }]]) {
        const res = await call('POST', '/v1/service-plans', who.admin, {
          name: `P ${hex()}`,
          price_minor: 1,
          currency: 'RON',
          validity_days: 30,
          services,
        });
        assertError(res, 400, 'validation_error');
        assert.ok(res.json().error.fields['services.0.service_id'], res.body);
      }
      const s = await service();
      const dup = await call('POST', '/v1/service-plans', who.admin, {
        name: `P ${hex()}`,
        price_minor: 1,
        currency: 'RON',
        validity_days: 30,
        services: [
          { service_id: s.id, quantity: 1 },
          { service_id: s.id, quantity: 2 },
        ],
      });
      assertError(dup, 400, 'validation_error');
      for (const extra of [
        { validity_days: 0 },
        { services: [{ service_id: s.id, quantity: 0 }] },
        { price_minor: 1.25 },
        { currency: 'bad' },
      ]) {
        assertError(
          await call('POST', '/v1/service-plans', who.admin, {
            name: `P ${hex()}`,
            price_minor: 1,
            currency: 'RON',
            validity_days: 30,
            ...extra,
          }),
          400,
          'validation_error',
        );
      }
      const p = await plan();
      assertError(await call('POST', '/v1/service-plans', who.admin, { ...p, id: undefined }), 400, 'validation_error');
      assertError(
        await call('POST', '/v1/service-plans', who.admin, {
          name: p.name.toLowerCase(),
          price_minor: 1,
          currency: 'RON',
          validity_days: 1,
        }),
        409,
        'service_plan_name_taken',
      );
      const theirProduct = dataOf(
        await call(
          'POST',
          '/v1/products',
          who.otherAdmin,
          { name: 'Theirs', sku: `T-${hex()}`, price_minor: 1, currency: 'EUR' },
          otherOrg,
        ),
        201,
      );
      for (const productId of [MISSING_UUID, theirProduct.id]) {
        const res = await call('POST', `/v1/service-plans/${p.id}/products`, who.admin, { product_id: productId });
        assertError(res, 400, 'validation_error');
        assert.ok(res.json().error.fields.product_id, res.body);
      }
      assertError(
        await call('POST', `/v1/service-plans/${MISSING_UUID}/products`, who.admin, { product_id: theirProduct.id }),
        404,
        'not_found',
      );
      assertError(await call('GET', `/v1/service-plans/${MISSING_UUID}/products`, who.admin), 404, 'not_found');
      assertError(await call('GET', '/v1/service-plans?sort=services', who.admin), 422, 'validation_failed');
    });
  });

  describe('who may', () => {
    it('specialist and customer support read everything but write nothing (403)', async () => {
      const s = await service();
      const p = await product();
      const pl = await plan();
      for (const token of [who.specialist, who.support]) {
        assert.equal(dataOf(await call('GET', `/v1/services/${s.id}`, token)).id, s.id);
        assert.equal(dataOf(await call('GET', `/v1/products/${p.id}`, token)).id, p.id);
        assert.equal(dataOf(await call('GET', `/v1/service-plans/${pl.id}`, token)).id, pl.id);
        assert.ok(dataOf(await call('GET', '/v1/products', token)).length > 0);
        assertError(
          await call('POST', '/v1/services', token, { name: 'X', duration_minutes: 30, price_minor: 0, currency: 'RON', mode: 'video' }),
          403,
          'forbidden',
        );
        assertError(await call('PATCH', `/v1/services/${s.id}`, token, { price_minor: 1 }), 403, 'forbidden');
        assertError(await call('DELETE', `/v1/products/${p.id}`, token), 403, 'forbidden');
        assertError(await call('PATCH', `/v1/service-plans/${pl.id}`, token, { price_minor: 1 }), 403, 'forbidden');
        assertError(await call('POST', `/v1/service-plans/${pl.id}/products`, token, { product_id: p.id }), 403, 'forbidden');
      }
    });

    it('a patient sees only public services and plans, and no products (403)', async () => {
      const tag = hex();
      const open = await service({ name: `Open ${tag}`, is_public: true });
      const hidden = await service({ name: `Hidden ${tag}` });
      const openPlan = await plan({ name: `Open plan ${tag}`, is_public: true });
      const hiddenPlan = await plan({ name: `Hidden plan ${tag}` });
      const services = (await call('GET', `/v1/services?q=${tag}`, who.patient)).json();
      assert.deepEqual(
        services.data.map((s: any) => s.id),
        [open.id],
      );
      assert.equal(services.pagination.total, 1);
      assert.equal(dataOf(await call('GET', `/v1/services?q=${tag}&is_public=false`, who.patient)).length, 0);
      assert.equal(dataOf(await call('GET', `/v1/services/${open.id}`, who.patient)).id, open.id);
      assertError(await call('GET', `/v1/services/${hidden.id}`, who.patient), 404, 'not_found');
      assert.deepEqual(
        dataOf(await call('GET', `/v1/service-plans?q=${tag}`, who.patient)).map((p: any) => p.id),
        [openPlan.id],
      );
      assertError(await call('GET', `/v1/service-plans/${hiddenPlan.id}`, who.patient), 404, 'not_found');
      assertError(await call('GET', '/v1/products', who.patient), 403, 'forbidden');
      assertError(await call('GET', `/v1/service-plans/${openPlan.id}/products`, who.patient), 403, 'forbidden');
      assertError(await call('PATCH', `/v1/services/${open.id}`, who.patient, { is_public: false }), 403, 'forbidden');
    });

    it('a non-member is refused (403); another organization sees and changes nothing of this one (404)', async () => {
      const s = await service({ is_public: true });
      const p = await product();
      const pl = await plan({ is_public: true });
      for (const url of ['/v1/services', '/v1/products', '/v1/service-plans', `/v1/services/${s.id}`]) {
        assertError(await call('GET', url, who.outsider), 403, 'forbidden');
        assertError(await call('GET', url, who.otherAdmin), 403, 'forbidden');
      }
      for (const [path, id] of [
        ['/v1/services', s.id],
        ['/v1/products', p.id],
        ['/v1/service-plans', pl.id],
      ] as const) {
        assertError(await call('GET', `${path}/${id}`, who.otherAdmin, undefined, otherOrg), 404, 'not_found');
        assertError(await call('PATCH', `${path}/${id}`, who.otherAdmin, { name: `Stolen ${hex()}` }, otherOrg), 404, 'not_found');
        assertError(await call('DELETE', `${path}/${id}`, who.otherAdmin, undefined, otherOrg), 404, 'not_found');
        assert.equal(dataOf(await call('GET', `${path}/${id}`, who.admin)).name.startsWith('Stolen'), false);
      }
      assertError(
        await call('POST', `/v1/service-plans/${pl.id}/products`, who.otherAdmin, { product_id: p.id }, otherOrg),
        404,
        'not_found',
      );
      const listed = dataOf(await call('GET', '/v1/services', who.otherAdmin, undefined, otherOrg)).map((x: any) => x.id);
      assert.equal(listed.includes(s.id), false);
      assertError(await t.call('GET', '/v1/services', { org }), 401, 'unauthorized');
    });
  });
});
