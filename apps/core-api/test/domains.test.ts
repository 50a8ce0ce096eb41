import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import dns2 from 'dns2';
import { startTestApp, uniqueEmail, type TestApp, assertError } from './helpers.ts';

// Custom domains (spec 2.6, 4.2, 7): list, add, delete and verify by a DNS TXT record, checked
// against a real DNS server on 127.0.0.1 whose answers each test controls.

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const TOKEN = /^clinic-verification=[0-9a-f]{32}$/;

/** What the test DNS server answers for a name: TXT records (each a list of character-strings), or a failure. */
type Answer = { txt: string[][] } | 'servfail' | 'drop';

// Response codes of RFC 1035 4.1.1 (dns2 has them at runtime, its types do not).
const RCODE = { SERVFAIL: 2, NXDOMAIN: 3 } as const;

/** An authoritative-looking UDP DNS server: names it does not know are NXDOMAIN. */
async function startDnsServer() {
  const { Packet } = dns2;
  const answers = new Map<string, Answer>();
  const queries: string[] = [];
  const server = dns2.createUDPServer((request, send) => {
    const q = request.questions[0];
    const response = Packet.createResponseFromRequest(request);
    if (!q) return void send(response);
    const name = q.name.toLowerCase();
    queries.push(name);
    const answer = answers.get(name);
    if (answer === 'drop') return; // never answers: the resolver times out
    if (answer === 'servfail') response.header.rcode = RCODE.SERVFAIL;
    else if (!answer) response.header.rcode = RCODE.NXDOMAIN;
    else if (q.type === Packet.TYPE.TXT) {
      // ttl 0: nothing between the resolver and this server may keep an old answer.
      for (const txt of answer.txt)
        response.answers.push({ name: q.name, type: Packet.TYPE.TXT, class: Packet.CLASS.IN, ttl: 0, data: txt } as never);
    }
    void send(response);
  });
  await server.listen(0, '127.0.0.1');
  const { port } = server.address() as AddressInfo;
  return {
    port,
    answers,
    queries,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const uniqueDomain = (prefix = 'book') => `${prefix}-${randomBytes(4).toString('hex')}.clinic-example.test`;

describe('custom domains', () => {
  let t: TestApp;
  let dns: Awaited<ReturnType<typeof startDnsServer>>;
  let orgA: { id: string; slug: string };
  let orgB: { id: string; slug: string };
  let adminA: string;
  let adminB: string;
  let specialistA: string;
  let patientA: string;
  let superadmin: string;

  before(async () => {
    dns = await startDnsServer();
    t = await startTestApp({ env: { DNS_SERVERS: `127.0.0.1:${dns.port}` } });
    orgA = await t.createOrg({ name: 'Clinic A' });
    orgB = await t.createOrg({ name: 'Clinic B' });
    adminA = (await t.addMember(orgA.id, uniqueEmail('admin-a'), 'admin')).token;
    adminB = (await t.addMember(orgB.id, uniqueEmail('admin-b'), 'admin')).token;
    specialistA = (await t.addMember(orgA.id, uniqueEmail('spec-a'), 'specialist')).token;
    patientA = (await t.addPatient(orgA.id, uniqueEmail('patient-a'))).token;
    superadmin = await t.superadmin();
  });
  after(async () => {
    await t?.close();
    await dns?.close();
  });

  const base = (orgId: string) => `/v1/organizations/${orgId}/domains`;
  const add = (token: string, orgId: string, body: unknown, headers?: Record<string, string>) =>
    t.call('POST', base(orgId), { token, body, ...(headers ? { headers } : {}) });
  const list = (token: string, orgId: string) => t.call('GET', base(orgId), { token });
  const verify = (token: string, orgId: string, id: string) => t.call('POST', `${base(orgId)}/${id}/verify`, { token });
  const remove = (token: string, orgId: string, id: string) => t.call('DELETE', `${base(orgId)}/${id}`, { token });
  const resolve = (domain: string) => t.call('GET', `/v1/public/organizations/resolve?domain=${encodeURIComponent(domain)}`);

  async function added(token: string, orgId: string, domain = uniqueDomain()) {
    const res = await add(token, orgId, { domain });
    assert.equal(res.statusCode, 201, res.body);
    return res.json().data as {
      id: string;
      domain: string;
      verified: boolean;
      verification: { type: string; name: string; value: string };
    };
  }

  async function auditRows(entityId: string) {
    const { rows } = await t.db.query<{ action: string; organization_id: string; actor_user_id: string; entity_type: string; data: any }>(
      `select action, organization_id, actor_user_id, entity_type, data from audit_logs where entity_id = $1 order by created_at, id`,
      [entityId],
    );
    return rows;
  }

  async function userId(token: string) {
    return (await t.call('GET', '/v1/me', { token })).json().data.id as string;
  }

  describe('POST /v1/organizations/{id}/domains (addDomain)', () => {
    it('returns 201 with the domain and the TXT record to publish, normalised, and audits it', async () => {
      const name = uniqueDomain('Book');
      const res = await add(adminA, orgA.id, { domain: ` ${name.toUpperCase()}. ` });
      assert.equal(res.statusCode, 201, res.body);
      const d = res.json().data;
      assert.deepEqual(Object.keys(d).sort(), ['created_at', 'domain', 'id', 'verification', 'verified', 'verified_at']);
      assert.match(d.id, UUID_V7);
      assert.equal(d.domain, name.toLowerCase(), 'lower case, trailing dot and spaces removed');
      assert.equal(d.verified, false);
      assert.equal(d.verified_at, null);
      assert.match(d.created_at, RFC3339_UTC);
      assert.equal(d.verification.type, 'TXT');
      assert.equal(d.verification.name, `_clinic-verification.${d.domain}`);
      assert.match(d.verification.value, TOKEN);

      const audit = await auditRows(d.id);
      assert.equal(audit.length, 1);
      assert.equal(audit[0]!.action, 'domain.added');
      assert.equal(audit[0]!.organization_id, orgA.id);
      assert.equal(audit[0]!.actor_user_id, await userId(adminA));
      assert.equal(audit[0]!.entity_type, 'organization_domain');
      assert.deepEqual(audit[0]!.data, { domain: d.domain });
    });

    it('every domain gets its own random token', async () => {
      const a = await added(adminA, orgA.id);
      const b = await added(adminA, orgA.id);
      assert.notEqual(a.verification.value, b.verification.value);
    });

    it('stores an international name in its xn-- form', async () => {
      const d = await added(adminA, orgA.id, `clinică-${randomBytes(3).toString('hex')}.example.ro`);
      assert.match(d.domain, /^xn--clinic-[a-z0-9-]+\.example\.ro$/);
    });

    it('refuses what is not a host name with 400 validation_error and fields.domain', async () => {
      for (const domain of [
        'https://clinic.example.com',
        '10.0.0.1',
        '[::1]',
        '::1',
        'localhost',
        'clinic.example.com:8443',
        'clinic.example.com/path',
        'user@clinic.example.com',
        '-bad.example.com',
        'bad-.example.com',
        'clinic..example.com',
        'clinic.example.com..',
        '*.example.com',
        'clinic.example.123',
        'under_score.example.com',
        `${'a'.repeat(64)}.example.com`,
        '   ',
      ]) {
        const err = assertError(await add(adminA, orgA.id, { domain }), 400, 'validation_error');
        assert.equal(typeof err.fields?.domain, 'string', `${domain}: ${JSON.stringify(err)}`);
      }
    });

    it('validates the body shape: missing, wrong type, unknown fields, invalid JSON', async () => {
      assert.equal(assertError(await add(adminA, orgA.id, {}), 400, 'validation_error').fields.domain, 'is required');
      assert.ok(assertError(await add(adminA, orgA.id, { domain: 42 }), 400, 'validation_error').fields.domain);
      assert.ok(assertError(await add(adminA, orgA.id, { domain: uniqueDomain(), extra: 1 }), 400, 'validation_error').fields.extra);
      assertError(await t.call('POST', base(orgA.id), { token: adminA, rawBody: '{"domain":' }), 400, 'invalid_body');
    });

    it('a domain belongs to one organization at most: 409 domain_taken, in another organization or the same', async () => {
      const d = await added(adminA, orgA.id);
      const other = assertError(await add(adminB, orgB.id, { domain: d.domain }), 409, 'domain_taken');
      assert.match(other.message, /another organization/);
      const same = assertError(await add(adminA, orgA.id, { domain: d.domain.toUpperCase() }), 409, 'domain_taken');
      assert.match(same.message, /already added to this organization/);
      // Taken even once deleted? No: deleting frees it for anyone.
      assert.equal((await remove(adminA, orgA.id, d.id)).statusCode, 204);
      const again = await add(adminB, orgB.id, { domain: d.domain });
      assert.equal(again.statusCode, 201, again.body);
      const { rows } = await t.db.query<{ n: number }>('select count(*)::int as n from organization_domains where domain = $1', [d.domain]);
      assert.equal(rows[0]!.n, 1);
    });

    it('honours Idempotency-Key: a retry replays the first response and adds nothing', async () => {
      const domain = uniqueDomain('idem');
      const headers = { 'idempotency-key': `add-${randomBytes(6).toString('hex')}` };
      const first = await add(adminA, orgA.id, { domain }, headers);
      assert.equal(first.statusCode, 201, first.body);
      const second = await add(adminA, orgA.id, { domain }, headers);
      assert.equal(second.statusCode, 201, second.body);
      assert.equal(second.body, first.body);
      assert.equal(second.headers['idempotency-replayed'], 'true');
      const { rows } = await t.db.query<{ n: number }>('select count(*)::int as n from organization_domains where domain = $1', [domain]);
      assert.equal(rows[0]!.n, 1);
    });
  });

  describe('GET /v1/organizations/{id}/domains (listDomains)', () => {
    it("lists the organization's domains, newest first, and none of another organization's", async () => {
      const org = await t.createOrg();
      const admin = (await t.addMember(org.id, uniqueEmail('admin'), 'admin')).token;
      assert.deepEqual((await list(admin, org.id)).json(), { data: [] });
      const first = await added(admin, org.id);
      const second = await added(admin, org.id);
      await added(adminB, orgB.id);
      const res = await list(admin, org.id);
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json();
      assert.deepEqual(Object.keys(body), ['data'], 'no pagination: an organization has few domains');
      assert.deepEqual(
        body.data.map((d: { id: string }) => d.id),
        [second.id, first.id],
      );
      assert.deepEqual(body.data[1], { ...first, verified_at: null, created_at: body.data[1].created_at });
      assert.equal(body.data[1].verification.value, first.verification.value, 'the record stays readable until verified and after');
    });
  });

  describe('POST /v1/organizations/{id}/domains/{domainId}/verify (verifyDomain)', () => {
    it('no record: 200 with verified false and a reason naming the record to publish; nothing written', async () => {
      const d = await added(adminA, orgA.id);
      const res = await verify(adminA, orgA.id, d.id);
      assert.equal(res.statusCode, 200, res.body);
      const v = res.json().data;
      assert.equal(v.verified, false);
      assert.equal(v.verified_at, null);
      assert.match(v.reason, /No TXT record was found/);
      assert.ok(v.reason.includes(d.verification.name) && v.reason.includes(d.verification.value), v.reason);
      assert.ok(dns.queries.includes(d.verification.name), 'the lookup went to the configured DNS server');
      assert.deepEqual(
        (await auditRows(d.id)).map((a) => a.action),
        ['domain.added'],
      );
      assertError(await resolve(d.domain), 404, 'organization_not_found');
    });

    it('a wrong record: verified false, the reason says the value does not match', async () => {
      const d = await added(adminA, orgA.id);
      dns.answers.set(d.verification.name, { txt: [['clinic-verification=0000'], ['v=spf1 -all']] });
      const v = (await verify(adminA, orgA.id, d.id)).json().data;
      assert.equal(v.verified, false);
      assert.match(v.reason, /2 found\) do not include the expected value/);
      assert.ok(v.reason.includes(d.verification.value));
      // The record published at the domain itself, not at the prefixed name, does not count either.
      dns.answers.set(d.domain, { txt: [[d.verification.value]] });
      dns.answers.delete(d.verification.name);
      assert.equal((await verify(adminA, orgA.id, d.id)).json().data.verified, false);
      assertError(await resolve(d.domain), 404, 'organization_not_found');
    });

    it('the right record: verified, audited once, and then resolvable publicly by domain', async () => {
      const d = await added(adminA, orgA.id);
      assertError(await resolve(d.domain), 404, 'organization_not_found');
      // Among other records, and split into two character-strings as long records are.
      const value = d.verification.value;
      dns.answers.set(d.verification.name, { txt: [['google-site-verification=abc'], [value.slice(0, 10), value.slice(10)]] });
      const res = await verify(adminA, orgA.id, d.id);
      assert.equal(res.statusCode, 200, res.body);
      const v = res.json().data;
      assert.equal(v.verified, true);
      assert.match(v.verified_at, RFC3339_UTC);
      assert.equal(v.reason, undefined);
      assert.equal(v.domain, d.domain);

      const resolved = await resolve(d.domain);
      assert.equal(resolved.statusCode, 200, resolved.body);
      assert.equal(resolved.json().data.id, orgA.id);
      assert.equal(resolved.json().data.slug, orgA.slug);
      // Resolution takes the same host in upper case and with a trailing dot.
      assert.equal((await resolve(`${d.domain.toUpperCase()}.`)).json().data.id, orgA.id);

      // Verifying again changes nothing, even with the record gone: no second lookup, no second entry.
      dns.answers.delete(d.verification.name);
      const asked = dns.queries.length;
      const again = (await verify(adminA, orgA.id, d.id)).json().data;
      assert.equal(again.verified, true);
      assert.equal(again.verified_at, v.verified_at);
      assert.equal(dns.queries.length, asked);
      const audit = await auditRows(d.id);
      assert.deepEqual(
        audit.map((a) => a.action),
        ['domain.added', 'domain.verified'],
      );
      assert.deepEqual(audit[1]!.data, { domain: d.domain, record_name: d.verification.name });
      assert.equal(audit[1]!.actor_user_id, await userId(adminA));

      const listed = (await list(adminA, orgA.id)).json().data.find((x: { id: string }) => x.id === d.id);
      assert.equal(listed.verified, true);
      assert.equal(listed.verified_at, v.verified_at);
    });

    it('a failing name server (SERVFAIL) or one that never answers: verified false with a reason, no error', async () => {
      const d = await added(adminA, orgA.id);
      dns.answers.set(d.verification.name, 'servfail');
      const failed = await verify(adminA, orgA.id, d.id);
      assert.equal(failed.statusCode, 200, failed.body);
      assert.equal(failed.json().data.verified, false);
      assert.match(failed.json().data.reason, /DNS lookup .* failed \(ESERVFAIL\)/);

      dns.answers.set(d.verification.name, 'drop');
      // The server never answers: an answer at all, saying ETIMEOUT, shows the lookup is bounded.
      const timedOut = await verify(adminA, orgA.id, d.id);
      assert.equal(timedOut.statusCode, 200, timedOut.body);
      assert.equal(timedOut.json().data.verified, false);
      assert.match(timedOut.json().data.reason, /failed \(ETIMEOUT\)/);
    });

    it('an unknown domain id, or one of another organization, is 404 not_found', async () => {
      const d = await added(adminA, orgA.id);
      assertError(await verify(adminB, orgB.id, d.id), 404, 'not_found');
      assertError(await verify(adminA, orgA.id, '01900000-0000-7000-8000-000000000000'), 404, 'not_found');
      assertError(await verify(adminA, orgA.id, 'not-a-uuid'), 404, 'not_found');
    });
  });

  describe('DELETE /v1/organizations/{id}/domains/{domainId} (deleteDomain)', () => {
    it('removes the domain (204), audits it, and a verified domain stops resolving at once', async () => {
      const d = await added(adminA, orgA.id);
      dns.answers.set(d.verification.name, { txt: [[d.verification.value]] });
      assert.equal((await verify(adminA, orgA.id, d.id)).json().data.verified, true);
      assert.equal((await resolve(d.domain)).statusCode, 200);

      const res = await remove(adminA, orgA.id, d.id);
      assert.equal(res.statusCode, 204, res.body);
      assert.equal(res.body, '');
      assertError(await resolve(d.domain), 404, 'organization_not_found');
      assert.ok(!(await list(adminA, orgA.id)).json().data.some((x: { id: string }) => x.id === d.id));
      const audit = await auditRows(d.id);
      assert.deepEqual(
        audit.map((a) => a.action),
        ['domain.added', 'domain.verified', 'domain.deleted'],
      );
      assert.deepEqual(audit[2]!.data, { domain: d.domain, was_verified: true });
      assert.equal(audit[2]!.organization_id, orgA.id);
      assertError(await remove(adminA, orgA.id, d.id), 404, 'not_found');
    });

    it("cross-tenant: another organization's admin gets 404 through its own organization and 403 through this one", async () => {
      const d = await added(adminA, orgA.id);
      assertError(await remove(adminB, orgB.id, d.id), 404, 'not_found');
      assertError(await remove(adminB, orgA.id, d.id), 403, 'forbidden');
      assert.ok(
        (await list(adminA, orgA.id)).json().data.some((x: { id: string }) => x.id === d.id),
        'still there',
      );
      assert.deepEqual(
        (await auditRows(d.id)).map((a) => a.action),
        ['domain.added'],
      );
    });
  });

  describe('access', () => {
    it('needs organizations.manage_domains: specialist, patient and admin of another organization get 403', async () => {
      const d = await added(adminA, orgA.id);
      for (const token of [specialistA, patientA, adminB]) {
        assertError(await list(token, orgA.id), 403, 'forbidden');
        assertError(await add(token, orgA.id, { domain: uniqueDomain() }), 403, 'forbidden');
        assertError(await verify(token, orgA.id, d.id), 403, 'forbidden');
        assertError(await remove(token, orgA.id, d.id), 403, 'forbidden');
      }
      // The path's organization is the context: X-Organization-ID naming B does not help B's admin.
      assertError(await t.call('GET', base(orgA.id), { token: adminB, org: orgB.id }), 403, 'forbidden');
      // And an admin of A acting through B's path is refused too, whatever its header says.
      assertError(await t.call('GET', base(orgB.id), { token: adminA, org: orgA.id }), 403, 'forbidden');
    });

    it('without a token: 401', async () => {
      assertError(await t.call('GET', base(orgA.id)), 401, 'unauthorized');
      assertError(await t.call('POST', base(orgA.id), { body: { domain: uniqueDomain() } }), 401, 'unauthorized');
    });

    it('a superadmin passes: list, add, verify and delete in any organization', async () => {
      const d = await added(superadmin, orgB.id);
      assert.ok((await list(superadmin, orgB.id)).json().data.some((x: { id: string }) => x.id === d.id));
      dns.answers.set(d.verification.name, { txt: [[d.verification.value]] });
      assert.equal((await verify(superadmin, orgB.id, d.id)).json().data.verified, true);
      assert.equal((await resolve(d.domain)).json().data.id, orgB.id);
      // Even the superadmin reaches a domain only through its own organization's path.
      assertError(await remove(superadmin, orgA.id, d.id), 404, 'not_found');
      assert.equal((await remove(superadmin, orgB.id, d.id)).statusCode, 204);
      const audit = await auditRows(d.id);
      assert.deepEqual(
        audit.map((a) => [a.action, a.organization_id]),
        [
          ['domain.added', orgB.id],
          ['domain.verified', orgB.id],
          ['domain.deleted', orgB.id],
        ],
      );
    });

    it('an organization that does not exist: 404 organization_not_found', async () => {
      assertError(await list(superadmin, '01900000-0000-7000-8000-000000000000'), 404, 'organization_not_found');
    });

    it('row-level security: app_rls without manage_domains sees and writes no domain rows', async () => {
      const d = await added(adminA, orgA.id);
      const spec = await userId(specialistA);
      const scope = { role: 'app_rls' as const, principalId: spec, orgId: orgA.id, permissions: ['organizations.view_directory'] };
      const seen = await t.db.withScope(
        scope,
        async (tx) => (await tx.query('select id from organization_domains where id = $1', [d.id])).rows.length,
      );
      assert.equal(seen, 0);
      await assert.rejects(
        t.db.withScope(scope, (tx) =>
          tx.query(`insert into organization_domains (organization_id, domain, verification_token) values ($1, $2, 'x')`, [
            orgA.id,
            uniqueDomain(),
          ]),
        ),
        /row-level security/,
      );
    });
  });
});
