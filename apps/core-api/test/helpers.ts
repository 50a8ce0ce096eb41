import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createTestDatabase, type Database, type TestDatabase } from '@clinic/db';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../src/app.ts';
import { parseConfig, type Config } from '../src/config.ts';
import { createDevIssuer, type DevIssuer } from '../src/platform/auth/dev-issuer.ts';
import { createRuntime, type Runtime } from '../src/platform/runtime.ts';

/** The shape of an app.inject response that the assertions below read. */
export type Res = { statusCode: number; body: string; headers: Record<string, unknown>; json: () => any };

/** Asserts the error envelope of spec 2.2: the status, the code and a non-empty message; returns `error`. */
export function assertError(res: Res, status: number, code: string) {
  assert.equal(res.statusCode, status, res.body);
  const err = res.json().error;
  assert.equal(err.code, code, res.body);
  assert.ok(typeof err.message === 'string' && err.message.length > 0, res.body);
  return err;
}

/** Asserts a success status and returns `data` of the envelope (null for 204 No Content). */
export function dataOf(res: Res, status = 200) {
  assert.equal(res.statusCode, status, res.body);
  return status === 204 ? null : res.json().data;
}

/**
 * The default grants of the system role templates (spec 2.7, plus the codes later migrations grant),
 * sorted: what a fresh organization's clones hold.
 */
export const TEMPLATE_GRANTS: Record<string, string[]> = {
  admin: [
    // Migrations 0067 and 0073: every appointments code.
    'appointments.cancel_org',
    'appointments.cancel_own',
    'appointments.create',
    'appointments.delete',
    'appointments.join',
    'appointments.update_org',
    'appointments.update_own',
    'appointments.view_org',
    'appointments.view_own',
    'audit_log.view_org',
    // Migration 0090: automation rules, message templates and the message log.
    'automations.manage',
    'automations.view_org',
    // Migration 0008: the consent routes of spec 4.6.
    'consents.manage',
    'consents.view_org',
    // Migrations 0020, 0024: custom fields, form templates, forms, patients, specialists.
    'custom_fields.manage',
    'data.view_deleted',
    // Migration 0100: documents and PDF templates (every code; documents.update_* stay ungranted).
    'documents.create',
    'documents.delete',
    'documents.publish',
    'documents.view_org',
    // Migration 0050: the organization's exercise library; reading patients' exercise sessions.
    'exercises.manage_org',
    // Migration 0030: the CSV export of the audit log.
    'export.csv',
    'form_templates.manage',
    'form_templates.view',
    'forms.create',
    'forms.delete_unsigned',
    'forms.fill_org',
    'forms.sign',
    'forms.view_org',
    // Migration 0009: clinics answer their patients' data-subject requests.
    'gdpr.erase_data',
    'gdpr.export_data',
    'gdpr.restrict_processing',
    'locations.manage',
    'messages.view_org',
    'organizations.manage_domains',
    'organizations.manage_members',
    // Migration 0121: publishing the clinic's privacy notice, given to every role that held consents.manage.
    'organizations.manage_privacy_notice',
    'organizations.update',
    'organizations.view_directory',
    'patients.delete',
    // Migration 0065: acting as a patient in the portal, with a reason.
    'patients.impersonate',
    'patients.onboard',
    'patients.update_org',
    'patients.view_org',
    'pdf_templates.manage',
    'pdf_templates.render',
    'pdf_templates.view_published',
    // Migration 0090: every segments code (spec 2.7).
    'segments.manage',
    'segments.view_org',
    'segments.view_own_membership',
    // Migration 0060: the service catalog (services, plans, products) and specialties.
    'services.manage',
    'services.view_org',
    'specialists.create',
    'specialists.delete',
    'specialists.update_org',
    'specialists.update_self',
    'specialists.view',
    'telemetry.view_org',
    // Migration 0081: every staff code of treatment plans.
    'treatment_plans.approve',
    'treatment_plans.assign',
    'treatment_plans.delete',
    'treatment_plans.manage',
    'treatment_plans.promote_to_org',
    'treatment_plans.view_org',
    // Migration 0013: webhook subscriptions (spec 4.9: admin rights).
    'webhooks.manage',
  ],
  // Migration 0024: the front desk registers patients; a clinician works with forms.
  customer_support: [
    // Migration 0067: the front desk books and manages the clinic's appointments.
    'appointments.cancel_org',
    'appointments.create',
    'appointments.update_org',
    'appointments.view_org',
    // Migration 0090: the front desk reads the automation trail, the message log and the segments.
    'automations.view_org',
    'form_templates.view',
    'messages.view_org',
    'organizations.view_directory',
    'patients.impersonate',
    'patients.onboard',
    'patients.update_org',
    'patients.view_org',
    // Migration 0100: the front desk reads published PDF templates, not documents (health data).
    'pdf_templates.view_published',
    'segments.view_org',
    'segments.view_own_membership',
    // Migration 0060: every staff role reads the catalog.
    'services.view_org',
    'specialists.view',
  ],
  specialist: [
    // Migration 0067: a clinician sees, books and manages its own appointments and joins video visits.
    'appointments.cancel_own',
    'appointments.create',
    'appointments.join',
    'appointments.update_own',
    'appointments.view_own',
    // Migration 0100: a clinician renders forms, writes, publishes and reads the clinic's documents.
    'documents.create',
    'documents.publish',
    'documents.view_org',
    'form_templates.view',
    'forms.create',
    'forms.fill_org',
    'forms.sign',
    'forms.view_org',
    'organizations.view_directory',
    'patients.update_org',
    'patients.view_org',
    'pdf_templates.render',
    'pdf_templates.view_published',
    // Migration 0090: which segments one is in, as a patient of one's own clinic.
    'segments.view_own_membership',
    'services.view_org',
    'specialists.update_self',
    'specialists.view',
    // Migration 0050: clinicians review their patients' exercise sessions.
    'telemetry.view_org',
    // Migration 0081: clinicians write, assign and approve (as the second clinician) treatment plans.
    'treatment_plans.approve',
    'treatment_plans.assign',
    'treatment_plans.manage',
    'treatment_plans.view_org',
  ],
};

/** A well-formed UUIDv7 that names no row. */
export const MISSING_UUID = '01900000-0000-7000-8000-000000000000';

export const MODE = process.env.TEST_MODE === 'services' ? 'services' : 'embedded';
export const REDIS_URL = MODE === 'services' ? (process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379') : null;
const ADMIN_URL = MODE === 'services' ? (process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres') : null;

/** A fresh database for one test file (PGlite in memory, or a new PostgreSQL database). */
export function freshDatabase(): Promise<TestDatabase> {
  return createTestDatabase(ADMIN_URL, process.env.TEST_DB_TEMPLATE);
}

/** An empty database (no migration applied), PGlite or PostgreSQL like freshDatabase: for upgrade tests. */
export function emptyDatabase(): Promise<TestDatabase> {
  return createTestDatabase(ADMIN_URL, null);
}

export interface TestApp {
  app: FastifyInstance;
  rt: Runtime;
  db: Database;
  config: Config;
  issuer: DevIssuer;
  /** A bearer token of the development issuer for this email. */
  token(email: string): Promise<string>;
  /** GET/POST/... through app.inject with the token of `as`, JSON in and out. */
  call(method: string, url: string, opts?: CallOptions): Promise<LightMyRequestResponse & { json: () => any }>;
  /** Makes the email a superadmin by direct database change (as the CLI does) and returns its token. */
  superadmin(email?: string): Promise<string>;
  /**
   * Opens break-glass sessions (spec 4.7, 4 hours) for the superadmin of `token` at the organization, one
   * per scope: what a superadmin who is not staff there needs to read its patients' data.
   */
  breakGlass(token: string, orgId: string, scopes?: string[]): Promise<void>;
  /** A new organization created through the API by a superadmin; returns its row. */
  createOrg(input?: {
    name?: string;
    slug?: string;
    language_code?: string;
  }): Promise<{ id: string; slug: string; name: string; language_code: string }>;
  /** A staff member with the organization's clone of a system role, created by direct database change. */
  addMember(orgId: string, email: string, roleCode: string): Promise<{ token: string; userId: string }>;
  /** A patient row for the email at the organization; returns the token. */
  addPatient(orgId: string, email: string): Promise<{ token: string; userId: string }>;
  /**
   * Publishes the organization's org_privacy_notice (a new version), as its administrators do before the
   * clinic can take patients (spec 4.6 rule 5). Its patients must then accept it (acceptOrgPurposes).
   */
  publishPrivacyNotice(orgId: string): Promise<void>;
  /** The person accepts the latest version of every required purpose of the organization (as onboarding does). */
  acceptOrgPurposes(orgId: string, userId: string): Promise<void>;
  close(): Promise<void>;
}

export interface CallOptions {
  as?: string | null;
  token?: string;
  body?: unknown;
  rawBody?: string;
  headers?: Record<string, string>;
  org?: string;
}

export function uniqueEmail(prefix = 'user'): string {
  return `${prefix}-${randomBytes(5).toString('hex')}@example.test`;
}

export function uniqueSlug(prefix = 'clinic'): string {
  return `${prefix}-${randomBytes(5).toString('hex')}`;
}

export interface TestAppOptions {
  env?: Record<string, string>;
  /** Reuse a database (a second instance on the same data); the caller drops it. */
  database?: TestDatabase;
  issuer?: DevIssuer;
  /** Apply migrations (default true; false when sharing an already migrated database). */
  migrate?: boolean;
}

export async function startTestApp(opts: TestAppOptions = {}): Promise<TestApp> {
  const owned = !opts.database;
  const database = opts.database ?? (await freshDatabase());
  const config = parseConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent',
    DATA_DIR: '/nonexistent-test-data-dir',
    ...(REDIS_URL ? { REDIS_URL, REDIS_KEY_PREFIX: `test:${randomBytes(6).toString('hex')}:` } : {}),
    // A test that lifts the per-address entry limit fires many requests, mostly as one user: the
    // per-user and per-organization limits (RATELIMIT_USER_LIMIT, RATELIMIT_TENANT_LIMIT) are lifted with it
    // unless it sets them too.
    ...(Number(opts.env?.RATELIMIT_API_LIMIT) > 1000
      ? { RATELIMIT_USER_LIMIT: opts.env?.RATELIMIT_API_LIMIT, RATELIMIT_TENANT_LIMIT: opts.env?.RATELIMIT_API_LIMIT }
      : {}),
    ...opts.env,
  });
  const issuer =
    opts.issuer ?? (await createDevIssuer({ dataDir: null, issuer: 'clinic-platform-dev-issuer', audience: 'clinic-platform' }));
  const rt = await createRuntime(config, { db: database.db, devIssuer: issuer, skipMigrations: opts.migrate === false });
  const app = await buildApp(rt);
  await app.ready();

  const token = (email: string) => issuer.sign(email);
  const call: TestApp['call'] = async (method, url, o = {}) => {
    const headers: Record<string, string> = { ...o.headers };
    const bearer = o.token ?? (o.as ? await token(o.as) : null);
    if (bearer) headers.authorization = `Bearer ${bearer}`;
    if (o.org) headers['x-organization-id'] = o.org;
    let payload: string | undefined;
    if (o.rawBody !== undefined) payload = o.rawBody;
    else if (o.body !== undefined) payload = JSON.stringify(o.body);
    if (payload !== undefined) headers['content-type'] ??= 'application/json';
    return app.inject({ method: method as 'GET', url, headers, ...(payload !== undefined ? { payload } : {}) });
  };

  const t: TestApp = {
    app,
    rt,
    db: database.db,
    config,
    issuer,
    token,
    call,
    async superadmin(email = uniqueEmail('admin')) {
      await database.db.query(`insert into users (email) values ($1) on conflict do nothing`, [email]);
      await database.db.query(
        `insert into platform_memberships (user_id, role) select id, 'superadmin' from users where lower(email) = lower($1) on conflict do nothing`,
        [email],
      );
      return token(email);
    },
    async breakGlass(tok, orgId, scopes = ['patient_list', 'patient_detail']) {
      for (const scope of scopes) {
        const res = await call('POST', '/v1/break-glass/sessions', {
          token: tok,
          body: {
            organization_id: orgId,
            scope,
            reason_category: 'support_ticket',
            reason_text: 'Test of a superadmin read',
            expires_in_minutes: 240,
          },
        });
        if (res.statusCode !== 201) throw new Error(`opening a break-glass session failed: ${res.statusCode} ${res.body}`);
      }
    },
    async createOrg(input = {}) {
      const su = await t.superadmin();
      const res = await call('POST', '/v1/organizations', {
        token: su,
        body: {
          name: input.name ?? 'Test clinic',
          slug: input.slug ?? uniqueSlug(),
          ...(input.language_code ? { language_code: input.language_code } : {}),
        },
      });
      if (res.statusCode !== 201) throw new Error(`createOrg failed: ${res.statusCode} ${res.body}`);
      return res.json().data;
    },
    async addMember(orgId, email, roleCode) {
      const tok = await token(email);
      // Sign in once so the user row exists with its identity, then attach the role.
      const me = await call('GET', '/v1/me', { token: tok });
      if (me.statusCode !== 200) throw new Error(`sign-in failed: ${me.statusCode} ${me.body}`);
      const userId = me.json().data.id as string;
      await database.db.query(
        `insert into memberships (user_id, organization_id, role_id)
         select $1, $2, r.id from roles r where r.organization_id = $2 and r.code = $3`,
        [userId, orgId, roleCode],
      );
      return { token: tok, userId };
    },
    async addPatient(orgId, email) {
      const tok = await token(email);
      const me = await call('GET', '/v1/me', { token: tok, org: orgId });
      if (me.statusCode !== 200) throw new Error(`sign-in failed: ${me.statusCode} ${me.body}`);
      const userId = me.json().data.id as string;
      await database.db.query(`insert into patients (organization_id, user_id) values ($1, $2) on conflict do nothing`, [orgId, userId]);
      return { token: tok, userId };
    },
    async publishPrivacyNotice(orgId) {
      const res = await call('POST', `/v1/organizations/${orgId}/consent-purposes/org_privacy_notice/versions`, {
        token: await t.superadmin(),
        body: { body_translations: { en: 'How this clinic processes your data.' } },
      });
      if (res.statusCode !== 201) throw new Error(`publishing the privacy notice failed: ${res.statusCode} ${res.body}`);
    },
    async acceptOrgPurposes(orgId, userId) {
      await database.db.query(
        `insert into consent_ledger (organization_id, patient_profile_id, purpose_code, purpose_version, source, granted_by_principal_id)
         select $1, $2, l.code, l.version, 'api', $2 from (
           select cp.code, coalesce(
             (select max(v.version) from consent_purpose_versions v where v.purpose_code = cp.code and v.organization_id = $1),
             (select max(v.version) from consent_purpose_versions v where v.purpose_code = cp.code and v.organization_id is null)
           ) as version
           from consent_purposes cp where cp.required and cp.scope = 'org'
         ) l where l.version is not null`,
        [orgId, userId],
      );
    },
    async close() {
      await app.close();
      await rt.close();
      if (owned) await database.drop();
    },
  };
  return t;
}
