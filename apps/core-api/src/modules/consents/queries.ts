import { isUniqueViolation, type Queryable } from '@clinic/db';
import { errors } from '@clinic/http-kit';

export type Scope = 'platform' | 'org';
export const SOURCES = ['signup_checkbox', 'self_toggle', 'form', 'staff_action', 'api'] as const;
export type Source = (typeof SOURCES)[number];

export interface PurposeRow {
  code: string;
  scope: Scope;
  name: string;
  description: string;
  legal_basis: string;
  withdrawable: boolean;
  required: boolean;
  /** The organization that created it (treatment_specific_* purposes), whose alone it is; null: the platform's. */
  organization_id: string | null;
}

export interface VersionRow {
  id: string;
  purpose_code: string;
  organization_id: string | null;
  version: number;
  body_translations: Record<string, string>;
  published_at: Date;
  published_by_principal_id: string | null;
}

export interface LedgerRow {
  id: string;
  organization_id: string | null;
  patient_profile_id: string;
  purpose_code: string;
  purpose_version: number;
  source: Source;
  source_form_id: string | null;
  granted_at: Date;
  granted_by_principal_id: string;
  granted_via_ip: string | null;
  withdrawn_at: Date | null;
  withdrawn_by_principal_id: string | null;
  withdrawal_reason: string | null;
  created_at: Date;
}

const PURPOSE_COLUMNS = 'code, scope, name, description, legal_basis, withdrawable, required, organization_id';
const VERSION_COLUMNS = 'id, purpose_code, organization_id, version, body_translations, published_at, published_by_principal_id';
const LEDGER_COLUMNS =
  'id, organization_id, patient_profile_id, purpose_code, purpose_version, source, source_form_id, granted_at, ' +
  'granted_by_principal_id, host(granted_via_ip) as granted_via_ip, withdrawn_at, withdrawn_by_principal_id, withdrawal_reason, created_at';

export async function listPurposes(tx: Queryable): Promise<PurposeRow[]> {
  const { rows } = await tx.query<PurposeRow>(`select ${PURPOSE_COLUMNS} from consent_purposes order by scope desc, code`);
  return rows;
}

/** An organization's own purpose (spec 2.8 treatment_specific_*): consent-based, organization-scope, never required. */
export async function insertOrgPurpose(
  tx: Queryable,
  orgId: string,
  p: { code: string; name: string; description: string },
): Promise<PurposeRow> {
  try {
    const { rows } = await tx.query<PurposeRow>(
      `insert into consent_purposes (code, scope, name, description, legal_basis, required, organization_id)
       values ($1, 'org', $2, $3, 'consent', false, $4) returning ${PURPOSE_COLUMNS}`,
      [p.code, p.name, p.description, orgId],
    );
    return rows[0]!;
  } catch (err) {
    if (isUniqueViolation(err))
      throw errors.conflict('purpose_code_taken', `A consent purpose with the code ${p.code} exists; codes are unique platform-wide.`);
    throw err;
  }
}

export async function findPurpose(tx: Queryable, code: string): Promise<PurposeRow | null> {
  const { rows } = await tx.query<PurposeRow>(`select ${PURPOSE_COLUMNS} from consent_purposes where code = $1`, [code]);
  return rows[0] ?? null;
}

/** The latest platform version of every purpose and, when orgId is given, that clinic's latest overrides. */
export async function latestVersions(tx: Queryable, orgId: string | null): Promise<VersionRow[]> {
  const { rows } = await tx.query<VersionRow>(
    `select distinct on (purpose_code, organization_id) ${VERSION_COLUMNS}
     from consent_purpose_versions
     where organization_id is null or organization_id = $1
     order by purpose_code, organization_id, version desc`,
    [orgId],
  );
  return rows;
}

/**
 * The effective latest version number of a purpose at an organization (null: platform): the clinic's
 * override when it has one, else the platform default; null when nothing is published.
 */
export async function effectiveVersion(tx: Queryable, code: string, orgId: string | null): Promise<number | null> {
  const { rows } = await tx.query<{ version: number | null }>(
    `select coalesce(
       (select max(version) from consent_purpose_versions where purpose_code = $1 and organization_id = $2),
       (select max(version) from consent_purpose_versions where purpose_code = $1 and organization_id is null)) as version`,
    [code, orgId],
  );
  return rows[0]?.version ?? null;
}

/** Serialises publications of one purpose, so that two publishers cannot both take version n + 1. */
export async function lockPurpose(tx: Queryable, code: string): Promise<void> {
  await tx.query(`select pg_advisory_xact_lock(hashtext('consent_purpose_versions:' || $1))`, [code]);
}

/** Highest platform or override version of a purpose (0 when none), the base of the next number. */
export async function highestVersion(tx: Queryable, code: string, orgId: string | null): Promise<number> {
  const { rows } = await tx.query<{ v: number }>(
    `select coalesce(max(version), 0)::int as v from consent_purpose_versions
     where purpose_code = $1 and (organization_id is null or organization_id = $2)`,
    [code, orgId],
  );
  return rows[0]!.v;
}

export async function insertVersion(
  tx: Queryable,
  v: { purposeCode: string; orgId: string | null; version: number; bodies: Record<string, string>; by: string },
): Promise<VersionRow> {
  try {
    const { rows } = await tx.query<VersionRow>(
      `insert into consent_purpose_versions (purpose_code, organization_id, version, body_translations, published_by_principal_id)
       values ($1, $2, $3, $4, $5) returning ${VERSION_COLUMNS}`,
      [v.purposeCode, v.orgId, v.version, JSON.stringify(v.bodies), v.by],
    );
    return rows[0]!;
  } catch (err) {
    if (isUniqueViolation(err))
      throw errors.conflict('version_conflict', 'Another version of this purpose was published at the same time; retry.');
    throw err;
  }
}

export interface NewLedgerRow {
  organizationId: string | null;
  patientProfileId: string;
  purposeCode: string;
  purposeVersion: number;
  source: Source;
  sourceFormId: string | null;
  grantedBy: string;
  ip: string | null;
}

export async function insertLedgerRow(tx: Queryable, g: NewLedgerRow): Promise<LedgerRow> {
  const { rows } = await tx.query<LedgerRow>(
    `insert into consent_ledger (organization_id, patient_profile_id, purpose_code, purpose_version, source, source_form_id,
                                 granted_by_principal_id, granted_via_ip)
     values ($1, $2, $3, $4, $5, $6, $7, $8::inet) returning ${LEDGER_COLUMNS}`,
    [g.organizationId, g.patientProfileId, g.purposeCode, g.purposeVersion, g.source, g.sourceFormId, g.grantedBy, g.ip],
  );
  return rows[0]!;
}

/** An active row of this person (optionally only at this organization), locked for the withdrawal. */
export async function findActiveRow(tx: Queryable, id: string, patientProfileId: string, orgId?: string): Promise<LedgerRow | null> {
  const { rows } = await tx.query<LedgerRow>(
    `select ${LEDGER_COLUMNS} from consent_ledger
     where id = $1 and patient_profile_id = $2 and withdrawn_at is null ${orgId ? 'and organization_id = $3' : ''}
     for update`,
    orgId ? [id, patientProfileId, orgId] : [id, patientProfileId],
  );
  return rows[0] ?? null;
}

/**
 * Withdraws every active row of the (person, organization, purpose) of `row`: a re-acceptance leaves the
 * previous row active as history, and the state after a withdrawal must be "withdrawn", not the
 * superseded grant. Returns the withdrawn rows.
 */
export async function withdrawActive(tx: Queryable, row: LedgerRow, by: string, reason: string | null): Promise<LedgerRow[]> {
  const { rows } = await tx.query<LedgerRow>(
    `update consent_ledger set withdrawn_at = now(), withdrawn_by_principal_id = $4, withdrawal_reason = $5
     where patient_profile_id = $1 and purpose_code = $2 and organization_id is not distinct from $3 and withdrawn_at is null
     returning ${LEDGER_COLUMNS}`,
    [row.patient_profile_id, row.purpose_code, row.organization_id, by, reason],
  );
  return rows;
}

/** The person's rows, optionally only at one organization; newest first. */
export async function ledgerRows(tx: Queryable, patientProfileId: string, orgId?: string): Promise<LedgerRow[]> {
  const { rows } = await tx.query<LedgerRow>(
    `select ${LEDGER_COLUMNS} from consent_ledger
     where patient_profile_id = $1 ${orgId ? 'and organization_id = $2' : ''}
     order by granted_at desc, id desc`,
    orgId ? [patientProfileId, orgId] : [patientProfileId],
  );
  return rows;
}

export async function hasActiveConsent(
  tx: Queryable,
  patientProfileId: string,
  orgId: string | null,
  purposeCode: string,
): Promise<boolean> {
  const { rows } = await tx.query<{ ok: boolean }>(
    `select exists (select 1 from consent_ledger
       where patient_profile_id = $1 and organization_id is not distinct from $2 and purpose_code = $3 and withdrawn_at is null) as ok`,
    [patientProfileId, orgId, purposeCode],
  );
  return rows[0]!.ok;
}

/** The person behind a live patients row of the organization in scope (see app.consent_patient_user_id). */
export async function patientUserId(tx: Queryable, patientId: string): Promise<string | null> {
  const { rows } = await tx.query<{ user_id: string | null }>('select app.consent_patient_user_id($1) as user_id', [patientId]);
  return rows[0]?.user_id ?? null;
}

/** Organizations where the person has a live patients row (own rows are readable under RLS). */
export async function patientOrgIds(tx: Queryable, userId: string): Promise<string[]> {
  const { rows } = await tx.query<{ organization_id: string }>(
    'select organization_id from patients where user_id = $1 and deleted_at is null order by created_at',
    [userId],
  );
  return rows.map((r) => r.organization_id);
}

/** 409 of every path that makes a patient at a clinic without its own published privacy notice (spec 4.6 rule 5). */
export const privacyNoticeMissing = () =>
  errors.conflict(
    'privacy_notice_missing',
    'This clinic has not published its privacy notice (org_privacy_notice) yet, so it cannot take patients; the clinic publishes it with POST /v1/organizations/{id}/consent-purposes/org_privacy_notice/versions.',
  );

/** Whether the organization may take patients: it has published its own org_privacy_notice (migration 0062). */
export async function orgAcceptsPatients(tx: Queryable, orgId: string): Promise<boolean> {
  const { rows } = await tx.query<{ ok: boolean }>('select app.org_accepts_patients($1) as ok', [orgId]);
  return rows[0]!.ok;
}

/** See app.onboard_patient: the caller's patients row at the organization, created or revived. */
export async function onboardPatientRow(
  tx: Queryable,
  orgId: string,
): Promise<{ patient_id: string; status: 'created' | 'revived' | 'existing' }> {
  try {
    const { rows } = await tx.query<{ patient_id: string; status: 'created' | 'revived' | 'existing' }>(
      'select patient_id, status from app.onboard_patient($1)',
      [orgId],
    );
    return rows[0]!;
  } catch (err) {
    const message = err instanceof Error ? err.message : '';
    if (message.includes('organization_not_found')) throw errors.organizationNotFound();
    if (message.includes('privacy_notice_missing')) throw privacyNoticeMissing();
    throw err;
  }
}
