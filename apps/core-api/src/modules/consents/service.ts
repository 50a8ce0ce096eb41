import type { Queryable } from '@clinic/db';
import { AppError, errors } from '@clinic/http-kit';
import { recordChange } from '../../platform/audit.ts';
import { emitEvent } from '../events/emit.ts';
import type { Actor } from '../../platform/actor.ts';
import {
  effectiveVersion,
  findActiveRow,
  findPurpose,
  highestVersion,
  insertLedgerRow,
  insertOrgPurpose,
  insertVersion,
  latestVersions,
  ledgerRows,
  listPurposes,
  onboardPatientRow,
  lockPurpose,
  patientOrgIds,
  patientUserId,
  withdrawActive,
  type LedgerRow,
  type PurposeRow,
  type Source,
  type VersionRow,
} from './queries.ts';

const LANGUAGE_TAG = /^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$/;

// ---------------------------------------------------------------------------------------------
// Catalog and versions

export interface CatalogEntry extends PurposeRow {
  platform_version: VersionRow | null;
  organization_version: VersionRow | null;
  /** What to render and accept: the clinic override when one exists, else the platform default. */
  latest: VersionRow | null;
}

/** Whose publisher ids a catalog reader may see: the people who run each text. */
export interface CatalogReader {
  /** Superadmins publish the platform texts. */
  isSuperadmin: boolean;
  /** Staff of the organization in scope publish its overrides. */
  isStaffOfOrg: boolean;
}

/**
 * GET /v1/consent-purposes: every purpose with its latest platform text and, for orgId, the clinic's
 * override. A clinic's texts are what a prospective patient reads before onboarding, so any signed-in
 * caller sees them; who published a text (a staff id) only those who run it see.
 */
export async function consentCatalog(tx: Queryable, orgId: string | null, reader: CatalogReader): Promise<CatalogEntry[]> {
  const [purposes, versions] = await Promise.all([listPurposes(tx), latestVersions(tx, orgId)]);
  const shown = (v: VersionRow | null, publisherVisible: boolean): VersionRow | null =>
    v && !publisherVisible ? { ...v, published_by_principal_id: null } : v;
  return purposes.map((p) => {
    const platform = shown(versions.find((v) => v.purpose_code === p.code && v.organization_id === null) ?? null, reader.isSuperadmin);
    const override = orgId
      ? shown(
          versions.find((v) => v.purpose_code === p.code && v.organization_id === orgId) ?? null,
          reader.isSuperadmin || reader.isStaffOfOrg,
        )
      : null;
    return { ...p, platform_version: platform, organization_version: override, latest: override ?? platform };
  });
}

function checkBodies(bodies: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [lang, text] of Object.entries(bodies)) {
    if (!LANGUAGE_TAG.test(lang))
      throw errors.validation({ body_translations: `"${lang}" is not a language code such as en, ro or pt-BR` });
    if (typeof text !== 'string' || !text.trim()) throw errors.validation({ body_translations: `the ${lang} text must not be blank` });
    out[lang] = text;
  }
  if (!Object.hasOwn(out, 'en')) throw errors.validation({ body_translations: 'an en text is required (front-ends fall back to en)' });
  return out;
}

/**
 * Publishes the next version of a purpose: a platform default (orgId null, superadmins) or a clinic
 * override (org-scope purposes only). An override's number continues from the highest of the
 * platform's and the clinic's own versions, so a version number names one text at an organization
 * and "accepted version >= latest" stays true only for what was really accepted.
 */
export async function publishVersion(
  tx: Queryable,
  actor: Actor,
  orgId: string | null,
  code: string,
  bodies: Record<string, string>,
): Promise<VersionRow> {
  const texts = checkBodies(bodies);
  const purpose = await findPurpose(tx, code);
  if (!purpose) throw errors.notFound(`No consent purpose with code ${code}.`);
  if (orgId && purpose.scope !== 'org') {
    throw errors.conflict('purpose_not_overridable', `${code} is a platform-scope purpose: only the platform publishes its text.`);
  }
  if (purpose.organization_id && purpose.organization_id !== orgId)
    throw errors.conflict('purpose_of_organization', `${code} belongs to one organization: only that organization publishes its text.`);
  await lockPurpose(tx, code);
  const version = (await highestVersion(tx, code, orgId)) + 1;
  const row = await insertVersion(tx, { purposeCode: code, orgId, version, bodies: texts, by: actor.ctx.principalId });
  await recordChange(
    tx,
    actor,
    'consent_purpose_version.published',
    { type: 'consent_purpose_version', id: row.id, organizationId: orgId },
    { purpose_code: code, version, languages: Object.keys(texts).sort() },
  );
  return row;
}

/**
 * POST /v1/organizations/{id}/consent-purposes: an organization's own treatment_specific_* purpose (spec 2.8),
 * which its treatment plans can require. It rests on consent, is never required by the re-consent gate, and is
 * that organization's alone (its texts and grants are there: migration 0082). Its text is published with
 * publishOrgConsentVersion like any clinic override.
 */
export async function createOrgPurpose(
  tx: Queryable,
  actor: Actor,
  orgId: string,
  body: { code: string; name: string; description: string },
) {
  const name = body.name.trim();
  const description = body.description.trim();
  if (!name || !description)
    throw errors.validation({
      ...(name ? {} : { name: 'must not be blank' }),
      ...(description ? {} : { description: 'must not be blank' }),
    });
  const row = await insertOrgPurpose(tx, orgId, { code: body.code, name, description });
  await recordChange(
    tx,
    actor,
    'consent_purpose.created',
    { type: 'consent_purpose', id: null, organizationId: orgId },
    { code: row.code, name },
  );
  return { ...row, platform_version: null, organization_version: null, latest: null };
}

// ---------------------------------------------------------------------------------------------
// The ledger

export interface GrantInput {
  organization_id: string | null;
  purpose_code: string;
  purpose_version: number;
  source: Source;
  source_form_id?: string | null | undefined;
}

export interface ConsentGroup {
  organization_id: string | null;
  purpose_code: string;
  scope: string;
  legal_basis: string;
  withdrawable: boolean;
  current: { id: string; purpose_version: number; granted_at: Date; source: string } | null;
  history: LedgerRow[];
}

function auditChange(tx: Queryable, actor: Actor, row: LedgerRow, change: 'granted' | 'withdrawn') {
  return recordChange(
    tx,
    actor,
    'consent_changed',
    { type: 'consent', id: row.id, organizationId: row.organization_id },
    {
      change,
      patient_profile_id: row.patient_profile_id,
      purpose_code: row.purpose_code,
      purpose_version: row.purpose_version,
      source: row.source,
      ...(change === 'withdrawn' ? { withdrawal_reason: row.withdrawal_reason } : {}),
    },
  );
}

/**
 * Validates and inserts a batch of grants for one person, all or nothing; every problem of the batch
 * is reported at once as 400 validation_error (fields grants.<i>.<name>). Organization grants of a
 * person for itself need a live patients row there (403 otherwise).
 */
async function grant(
  tx: Queryable,
  actor: Actor,
  patientProfileId: string,
  grants: GrantInput[],
  opts: { patientAt: (orgId: string) => boolean; onlyOrg?: string },
): Promise<LedgerRow[]> {
  const fields: Record<string, string> = {};
  const seen = new Set<string>();
  const checked: { g: GrantInput; purpose: PurposeRow }[] = [];
  for (const [i, g] of grants.entries()) {
    const at = (name: string, reason: string) => (fields[`grants.${i}.${name}`] ??= reason);
    const purpose = await findPurpose(tx, g.purpose_code);
    if (!purpose) {
      at('purpose_code', 'unknown consent purpose');
      continue;
    }
    if (g.source_form_id && g.source !== 'form') at('source_form_id', 'set only when source is form');
    if (purpose.scope === 'platform' && g.organization_id !== null)
      at('organization_id', `${g.purpose_code} is platform-scope: organization_id must be null`);
    if (purpose.scope === 'org' && g.organization_id === null)
      at('organization_id', `${g.purpose_code} is organization-scope: name the organization`);
    if (opts.onlyOrg && g.organization_id !== opts.onlyOrg) at('organization_id', 'must be the organization of the path');
    if (purpose.organization_id && g.organization_id !== purpose.organization_id)
      at('organization_id', `${g.purpose_code} belongs to another organization`);
    const key = `${g.organization_id ?? '-'}:${g.purpose_code}`;
    if (seen.has(key)) at('purpose_code', 'granted twice in this batch');
    seen.add(key);
    if (fields[`grants.${i}.organization_id`]) continue;
    const latest = await effectiveVersion(tx, g.purpose_code, g.organization_id);
    if (latest === null) at('purpose_version', `no version of ${g.purpose_code} is published yet`);
    else if (g.purpose_version !== latest) at('purpose_version', `must be the latest published version, ${latest}`);
    checked.push({ g, purpose });
  }
  if (Object.keys(fields).length) throw errors.validation(fields, 'Some grants are invalid; see fields. Nothing was recorded.');
  for (const { g } of checked) {
    if (g.organization_id !== null && !opts.patientAt(g.organization_id)) {
      throw errors.forbidden(`You are not a patient of organization ${g.organization_id}; consents there are given by its patients.`);
    }
  }
  const rows: LedgerRow[] = [];
  for (const { g } of checked) {
    const row = await insertLedgerRow(tx, {
      organizationId: g.organization_id,
      patientProfileId,
      purposeCode: g.purpose_code,
      purposeVersion: g.purpose_version,
      source: g.source,
      sourceFormId: g.source === 'form' ? (g.source_form_id ?? null) : null,
      grantedBy: actor.ctx.principalId,
      ip: actor.ip,
    });
    await auditChange(tx, actor, row, 'granted');
    rows.push(row);
  }
  return rows;
}

async function withdraw(tx: Queryable, actor: Actor, row: LedgerRow | null, reason: string | null): Promise<LedgerRow> {
  if (!row) throw errors.notFound('No active consent with this id.');
  const purpose = (await findPurpose(tx, row.purpose_code))!;
  if (!purpose.withdrawable) {
    throw errors.conflict(
      'not_withdrawable',
      `${row.purpose_code} rests on ${purpose.legal_basis.replace('_', ' ')}, not on consent: it cannot be withdrawn by toggle.`,
    );
  }
  const withdrawn = await withdrawActive(tx, row, actor.ctx.principalId, reason);
  for (const w of withdrawn) await auditChange(tx, actor, w, 'withdrawn');
  // The profile_sharing cascade (spec 3.2) is the database trigger consent_ledger_withdrawal_cascade.
  return withdrawn.find((w) => w.id === row.id)!;
}

/** Groups rows by (organization, purpose): every given key appears, with current null when never granted. */
function group(purposes: PurposeRow[], keys: { orgId: string | null; code: string }[], rows: LedgerRow[]): ConsentGroup[] {
  const byCode = new Map(purposes.map((p) => [p.code, p]));
  const all = new Map<string, { orgId: string | null; code: string }>();
  for (const k of keys) all.set(`${k.orgId ?? ''}:${k.code}`, k);
  for (const r of rows) all.set(`${r.organization_id ?? ''}:${r.purpose_code}`, { orgId: r.organization_id, code: r.purpose_code });
  const out = [...all.values()].map(({ orgId, code }) => {
    const p = byCode.get(code)!;
    const history = rows.filter((r) => r.organization_id === orgId && r.purpose_code === code);
    // Rows are newest first: the current state is the latest active row (spec 2.8).
    const active = history.find((r) => r.withdrawn_at === null);
    return {
      organization_id: orgId,
      purpose_code: code,
      scope: p.scope,
      legal_basis: p.legal_basis,
      withdrawable: p.withdrawable,
      current: active
        ? { id: active.id, purpose_version: active.purpose_version, granted_at: active.granted_at, source: active.source }
        : null,
      history,
    };
  });
  return out.sort(
    (a, b) => (a.organization_id ?? '').localeCompare(b.organization_id ?? '') || a.purpose_code.localeCompare(b.purpose_code),
  );
}

// --- The person's own routes (spec 4.6)

export async function myConsents(tx: Queryable, actor: Actor): Promise<ConsentGroup[]> {
  const me = actor.ctx.principalId;
  const [purposes, orgIds, rows] = await Promise.all([listPurposes(tx), patientOrgIds(tx, me), ledgerRows(tx, me)]);
  const keys = purposes.flatMap((p): { orgId: string | null; code: string }[] =>
    p.scope === 'platform'
      ? [{ orgId: null, code: p.code }]
      : orgIds.filter((orgId) => p.organization_id === null || p.organization_id === orgId).map((orgId) => ({ orgId, code: p.code })),
  );
  return group(purposes, keys, rows);
}

export async function grantMine(tx: Queryable, actor: Actor, grants: GrantInput[]): Promise<LedgerRow[]> {
  const me = actor.ctx.principalId;
  const orgIds = new Set(await patientOrgIds(tx, me));
  return grant(tx, actor, me, grants, { patientAt: (orgId) => orgIds.has(orgId) });
}

export async function withdrawMine(tx: Queryable, actor: Actor, id: string, reason: string | null): Promise<LedgerRow> {
  return withdraw(tx, actor, await findActiveRow(tx, id, actor.ctx.principalId), reason);
}

// --- Staff routes under /v1/organizations/{org_id}/patients/{patient_id}/consents

async function personOf(tx: Queryable, patientId: string): Promise<string> {
  const userId = await patientUserId(tx, patientId);
  if (!userId) throw errors.notFound('No patient with this id in this organization.');
  return userId;
}

export async function patientConsents(tx: Queryable, orgId: string, patientId: string): Promise<ConsentGroup[]> {
  const userId = await personOf(tx, patientId);
  const [purposes, rows] = await Promise.all([listPurposes(tx), ledgerRows(tx, userId, orgId)]);
  const keys = purposes
    .filter((p) => p.scope === 'org' && (p.organization_id === null || p.organization_id === orgId))
    .map((p) => ({ orgId, code: p.code }));
  return group(purposes, keys, rows);
}

export async function staffGrant(
  tx: Queryable,
  actor: Actor,
  orgId: string,
  patientId: string,
  grants: { purpose_code: string; purpose_version: number; organization_id?: string | undefined }[],
): Promise<LedgerRow[]> {
  const userId = await personOf(tx, patientId);
  const inputs: GrantInput[] = grants.map((g) => ({
    organization_id: g.organization_id ?? orgId,
    purpose_code: g.purpose_code,
    purpose_version: g.purpose_version,
    source: 'staff_action',
  }));
  return grant(tx, actor, userId, inputs, { patientAt: () => true, onlyOrg: orgId });
}

export async function staffWithdraw(
  tx: Queryable,
  actor: Actor,
  orgId: string,
  patientId: string,
  id: string,
  reason: string | null,
): Promise<LedgerRow> {
  const userId = await personOf(tx, patientId);
  return withdraw(tx, actor, await findActiveRow(tx, id, userId, orgId), reason);
}

// --- Patient onboarding (POST /v1/portal/onboard)

export interface OnboardResult {
  patient_id: string;
  organization_id: string;
  patient_status: 'created' | 'revived' | 'existing';
  consents: LedgerRow[];
}

/**
 * The caller becomes a patient of the organization (a new row, a revived soft-deleted one, or the
 * live one already linked at first sign-in) and records its initial grants, in one transaction. The
 * grants must accept the latest version of every required organization purpose published there
 * (org_privacy_notice at least), so that the new patient is not stopped by the re-consent gate at once.
 */
export async function onboardPatient(tx: Queryable, actor: Actor, orgId: string, grants: GrantInput[]): Promise<OnboardResult> {
  const patient = await onboardPatientRow(tx, orgId);
  const purposes = await listPurposes(tx);
  const fields: Record<string, string> = {};
  for (const p of purposes.filter((x) => x.required && x.scope === 'org')) {
    const latest = await effectiveVersion(tx, p.code, orgId);
    if (latest === null) continue;
    if (!grants.some((g) => g.organization_id === orgId && g.purpose_code === p.code && g.purpose_version === latest)) {
      fields.grants = `must accept ${p.code} version ${latest} of this organization`;
      break;
    }
  }
  if (Object.keys(fields).length) throw errors.validation(fields, "Onboarding must accept the clinic's required purposes; see fields.");
  const consents = await grant(tx, actor, actor.ctx.principalId, grants, {
    patientAt: (id) => id === orgId || actor.ctx.patientOrgIds.includes(id),
  });
  await recordChange(
    tx,
    actor,
    'patient.onboarded',
    { type: 'patient', id: patient.patient_id, organizationId: orgId },
    { status: patient.status, purposes: consents.map((c) => c.purpose_code) },
  );
  await emitEvent(tx, {
    organizationId: orgId,
    type: 'patient.onboarded',
    data: { organization_id: orgId, patient_id: patient.patient_id, user_id: actor.ctx.principalId },
  });
  return { patient_id: patient.patient_id, organization_id: orgId, patient_status: patient.status, consents };
}

/** The 403 of a feature-level gate (spec 4.6 rule 4, spec 7). */
export function featureConsentMissing(purpose: string): AppError {
  return new AppError(403, 'consent_required', `This feature needs the ${purpose} consent; grant it with POST /v1/me/consents.`, {
    extra: { missing_purpose: purpose },
  });
}
