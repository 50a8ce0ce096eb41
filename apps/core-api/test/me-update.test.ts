import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { startTestApp, uniqueEmail, type TestApp, assertError } from './helpers.ts';

// PATCH /v1/me (preferred language; null inherits the organization's language_code) and
// GET /v1/me/clinics (spec 2.3, 2.5, 4.5 "Me and portal", 5.7, 9.5).

const GET_ME_KEYS = [
  'confirmed',
  'current_organization_id',
  'current_permissions',
  'current_role_code',
  'email',
  'id',
  'is_patient_at_current_org',
  'is_staff_at_current_org',
  'is_superadmin',
  'last_activity',
  'memberships',
  'patient_org_ids',
  'platform_roles',
  'preferred_language',
];

describe('PATCH /v1/me and GET /v1/me/clinics', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  const patchMe = (token: string, body: unknown, org?: string) => t.call('PATCH', '/v1/me', { token, body, ...(org ? { org } : {}) });

  async function stored(userId: string): Promise<string | null> {
    const { rows } = await t.db.query<{ preferred_language: string | null }>('select preferred_language from users where id = $1', [
      userId,
    ]);
    return rows[0]!.preferred_language;
  }

  async function audits(userId: string) {
    const { rows } = await t.db.query<{
      organization_id: string | null;
      actor_user_id: string;
      entity_type: string;
      entity_id: string;
      data: any;
    }>(
      `select organization_id, actor_user_id, entity_type, entity_id, data from audit_logs
       where action = 'user.updated' and entity_id = $1 order by created_at, id`,
      [userId],
    );
    return rows;
  }

  async function getMe(token: string, org?: string) {
    const res = await t.call('GET', '/v1/me', { token, ...(org ? { org } : {}) });
    assert.equal(res.statusCode, 200, res.body);
    return res.json().data;
  }

  describe('PATCH /v1/me', () => {
    it('sets preferred_language: 200 with the current user plus effective_language, stored, audited in platform scope', async () => {
      const org = await t.createOrg({ language_code: 'de' });
      const user = await t.addMember(org.id, uniqueEmail('lang'), 'specialist');
      const res = await patchMe(user.token, { preferred_language: 'ro' });
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json();
      assert.deepEqual(Object.keys(body), ['data']);
      assert.deepEqual(Object.keys(body.data).sort(), [...GET_ME_KEYS, 'effective_language'].sort());
      assert.equal(body.data.id, user.userId);
      assert.equal(body.data.preferred_language, 'ro');
      assert.equal(body.data.effective_language, 'ro');
      assert.equal(body.data.current_organization_id, org.id);
      assert.equal(body.data.current_role_code, 'specialist');
      assert.equal(body.data.is_staff_at_current_org, true);
      assert.equal(await stored(user.userId), 'ro');
      assert.deepEqual(await audits(user.userId), [
        {
          organization_id: null,
          actor_user_id: user.userId,
          entity_type: 'user',
          entity_id: user.userId,
          data: { changes: { preferred_language: { from: null, to: 'ro' } } },
        },
      ]);
      // GET /v1/me carries it too, and apart from effective_language the shapes agree.
      const me = await getMe(user.token);
      assert.deepEqual(Object.keys(me).sort(), [...GET_ME_KEYS].sort());
      assert.equal(me.preferred_language, 'ro');
      const { effective_language: _e, last_activity: _l1, ...patched } = body.data;
      const { last_activity: _l2, ...read } = me;
      assert.deepEqual(patched, read);
    });

    it('null inherits the language_code of the organization in scope; en without one', async () => {
      const de = await t.createOrg({ language_code: 'de' });
      const ro = await t.createOrg({ language_code: 'ro' });
      const email = uniqueEmail('inherit');
      const user = await t.addMember(de.id, email, 'admin');
      await t.addMember(ro.id, email, 'specialist');
      assert.equal((await patchMe(user.token, { preferred_language: 'fr' })).json().data.effective_language, 'fr');

      const res = await patchMe(user.token, { preferred_language: null });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().data.preferred_language, null);
      assert.equal(res.json().data.effective_language, 'de', 'the first membership is in scope');
      assert.equal(await stored(user.userId), null);
      assert.deepEqual(
        (await audits(user.userId)).map((a) => a.data.changes.preferred_language),
        [
          { from: null, to: 'fr' },
          { from: 'fr', to: null },
        ],
      );
      // X-Organization-ID chooses the organization whose language is inherited.
      const atRo = await patchMe(user.token, { preferred_language: null }, ro.id);
      assert.equal(atRo.statusCode, 200, atRo.body);
      assert.equal(atRo.json().data.effective_language, 'ro');
      assert.equal(atRo.json().data.current_organization_id, ro.id);
      assert.equal((await getMe(user.token)).preferred_language, null);

      // A caller without any organization, and a superadmin without scope: en.
      const loner = await t.token(uniqueEmail('loner'));
      assert.equal((await patchMe(loner, { preferred_language: null })).json().data.effective_language, 'en');
      const su = await t.superadmin();
      const suRes = await patchMe(su, { preferred_language: null });
      assert.equal(suRes.statusCode, 200, suRes.body);
      assert.equal(suRes.json().data.effective_language, 'en');
      // A superadmin scoped to an organization inherits its language.
      assert.equal((await patchMe(su, { preferred_language: null }, ro.id)).json().data.effective_language, 'ro');
    });

    it('a patient inherits the language of the organization where it is a patient', async () => {
      const org = await t.createOrg({ language_code: 'ro' });
      const patient = await t.addPatient(org.id, uniqueEmail('patient'));
      const res = await patchMe(patient.token, { preferred_language: null }, org.id);
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().data.is_patient_at_current_org, true);
      assert.equal(res.json().data.effective_language, 'ro');
    });

    it('an organization the caller has no access to lends it no language', async () => {
      const own = await t.createOrg({ language_code: 'de' });
      const other = await t.createOrg({ language_code: 'ro' });
      const user = await t.addMember(own.id, uniqueEmail('outsider'), 'admin');
      const res = await patchMe(user.token, { preferred_language: null }, other.id);
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().data.effective_language, 'en');
    });

    it('accepts language tags such as pt-BR, zh-Hant-TW and fil, stored as given', async () => {
      const org = await t.createOrg();
      const user = await t.addMember(org.id, uniqueEmail('tags'), 'admin');
      for (const tag of ['pt-BR', 'zh-Hant-TW', 'fil', 'en', 'sr-Latn', 'es-419']) {
        const res = await patchMe(user.token, { preferred_language: tag });
        assert.equal(res.statusCode, 200, `${tag}: ${res.body}`);
        assert.equal(res.json().data.preferred_language, tag);
        assert.equal(await stored(user.userId), tag);
      }
    });

    it('a value that changes nothing: 200, no write, no audit entry', async () => {
      const org = await t.createOrg();
      const user = await t.addMember(org.id, uniqueEmail('same'), 'admin');
      assert.equal((await patchMe(user.token, { preferred_language: null })).statusCode, 200);
      assert.deepEqual(await audits(user.userId), [], 'null to null is no change');
      assert.equal((await patchMe(user.token, { preferred_language: 'ro' })).statusCode, 200);
      const { rows } = await t.db.query<{ updated_at: Date }>('select updated_at from users where id = $1', [user.userId]);
      const res = await patchMe(user.token, { preferred_language: 'ro' });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().data.preferred_language, 'ro');
      assert.equal((await audits(user.userId)).length, 1);
      const { rows: after } = await t.db.query<{ updated_at: Date }>('select updated_at from users where id = $1', [user.userId]);
      assert.deepEqual(after, rows);
    });

    it('an empty body, unknown fields and invalid tags: 400 validation_error naming the input; nothing stored or audited', async () => {
      const org = await t.createOrg();
      const user = await t.addMember(org.id, uniqueEmail('invalid'), 'admin');
      assert.equal((await patchMe(user.token, { preferred_language: 'ro' })).statusCode, 200);
      const cases: { body: unknown; field: string }[] = [
        { body: {}, field: '_body' },
        { body: { language: 'en' }, field: 'language' },
        { body: { preferred_language: 'en', email: 'x@example.test' }, field: 'email' },
        { body: { preferred_language: 'en', current_organization_id: org.id }, field: 'current_organization_id' },
        { body: { preferred_language: 'EN' }, field: 'preferred_language' },
        { body: { preferred_language: 'e' }, field: 'preferred_language' },
        { body: { preferred_language: 'english' }, field: 'preferred_language' },
        { body: { preferred_language: 'en_US' }, field: 'preferred_language' },
        { body: { preferred_language: 'en-' }, field: 'preferred_language' },
        { body: { preferred_language: 'en-a' }, field: 'preferred_language' },
        { body: { preferred_language: '' }, field: 'preferred_language' },
        { body: { preferred_language: ' en' }, field: 'preferred_language' },
        { body: { preferred_language: `en${'-abcdefgh'.repeat(4)}` }, field: 'preferred_language' },
        { body: { preferred_language: 42 }, field: 'preferred_language' },
        { body: { preferred_language: ['en'] }, field: 'preferred_language' },
      ];
      for (const c of cases) {
        const err = assertError(await patchMe(user.token, c.body), 400, 'validation_error');
        assert.equal(typeof err.fields?.[c.field], 'string', `${JSON.stringify(c.body)} -> ${JSON.stringify(err)}`);
      }
      assertError(await t.call('PATCH', '/v1/me', { token: user.token, rawBody: '{"preferred_language": ' }), 400, 'invalid_body');
      assert.equal(await stored(user.userId), 'ro');
      assert.equal((await audits(user.userId)).length, 1);
    });

    it('without a token: 401 unauthorized', async () => {
      assertError(await t.call('PATCH', '/v1/me', { body: { preferred_language: 'ro' } }), 401, 'unauthorized');
      assertError(await t.call('PATCH', '/v1/me', { token: 'garbage', body: { preferred_language: 'ro' } }), 401, 'unauthorized');
    });

    it('the audit entry is written in the same transaction: when it fails, nothing is stored', async () => {
      const org = await t.createOrg();
      const user = await t.addMember(org.id, uniqueEmail('atomic'), 'admin');
      const fn = `test_refuse_${randomBytes(4).toString('hex')}`;
      await t.db.exec(
        `create function ${fn}() returns trigger language plpgsql as $$ begin
           if new.action = 'user.updated' and new.entity_id = '${user.userId}' then raise exception 'audit refused'; end if;
           return new; end $$;
         create trigger ${fn} before insert on audit_logs for each row execute function ${fn}();`,
      );
      try {
        const res = await patchMe(user.token, { preferred_language: 'ro' });
        assertError(res, 500, 'internal_error');
        assert.doesNotMatch(res.body, /audit refused/);
        assert.equal(await stored(user.userId), null);
      } finally {
        await t.db.exec(`drop trigger ${fn} on audit_logs; drop function ${fn}();`);
      }
      assert.deepEqual(await audits(user.userId), []);
    });
  });

  describe('GET /v1/me/clinics', () => {
    const clinics = (token: string, org?: string) => t.call('GET', '/v1/me/clinics', { token, ...(org ? { org } : {}) });

    it('every organization the caller can enter, by name, with the kind of access; no pagination', async () => {
      const k = randomBytes(3).toString('hex');
      const a = await t.createOrg({ name: `Clinic C ${k}`, language_code: 'ro' });
      const b = await t.createOrg({ name: `clinic b ${k}` });
      const c = await t.createOrg({ name: `Clinic A ${k}`, language_code: 'de' });
      const d = await t.createOrg({ name: `Clinic D ${k}` });
      const email = uniqueEmail('clinics');
      const user = await t.addMember(a.id, email, 'admin');
      await t.addMember(b.id, email, 'specialist');
      await t.db.query('insert into patients (organization_id, user_id) values ($1, $2), ($3, $2)', [b.id, user.userId, c.id]);
      void d;

      const res = await clinics(user.token);
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json();
      assert.deepEqual(Object.keys(body), ['data'], 'no pagination');
      assert.deepEqual(body.data, [
        { id: c.id, slug: c.slug, name: c.name, language_code: 'de', is_staff: false, is_patient: true, role_code: null },
        { id: b.id, slug: b.slug, name: b.name, language_code: 'en', is_staff: true, is_patient: true, role_code: 'specialist' },
        { id: a.id, slug: a.slug, name: a.name, language_code: 'ro', is_staff: true, is_patient: false, role_code: 'admin' },
      ]);
      // The same whatever the organization in scope: it is cross-organization self-context.
      for (const org of [a.id, c.id, d.id]) {
        const r = await clinics(user.token, org);
        assert.equal(r.statusCode, 200, r.body);
        assert.deepEqual(r.json(), body);
      }
    });

    it('a soft-deleted patient row is not an entry', async () => {
      const org = await t.createOrg();
      const patient = await t.addPatient(org.id, uniqueEmail('patient'));
      assert.deepEqual(
        (await clinics(patient.token)).json().data.map((o: { id: string }) => o.id),
        [org.id],
      );
      await t.db.query('update patients set deleted_at = now() where organization_id = $1 and user_id = $2', [org.id, patient.userId]);
      assert.deepEqual((await clinics(patient.token)).json(), { data: [] });
    });

    it('a caller without organizations and a superadmin (no memberships) get an empty list', async () => {
      await t.createOrg();
      assert.deepEqual((await clinics(await t.token(uniqueEmail('nobody')))).json(), { data: [] });
      const su = await t.superadmin();
      const res = await clinics(su);
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(res.json(), { data: [] });
    });

    it('X-Organization-ID of an organization that does not exist: 404 organization_not_found; without a token: 401', async () => {
      const user = await t.addMember((await t.createOrg()).id, uniqueEmail(), 'admin');
      assertError(await clinics(user.token, '01900000-0000-7000-8000-0000000000dd'), 404, 'organization_not_found');
      assertError(await t.call('GET', '/v1/me/clinics'), 401, 'unauthorized');
    });
  });
});
