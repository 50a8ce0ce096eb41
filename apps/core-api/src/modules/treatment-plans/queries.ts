import { type Queryable, pgErrorCode, prepared } from '@clinic/db';
import { containsPattern, type DateRange, errors, type Pagination, SqlWhere, type Sort } from '@clinic/http-kit';
import { versionQueries } from '../../platform/versioned/queries.ts';
import type { Joint } from './schemas.ts';
import { markDeleted } from '../../platform/deleted.ts';

export interface PlanSet {
  side: 'left' | 'right';
  reps: number;
}
export interface PlanItem {
  exercise_id: string;
  sets?: PlanSet[];
  duration_seconds?: number;
  rest_seconds: number;
  target_rom: { joint: Joint; min_deg: number; max_deg: number } | null;
  notes: string | null;
  video_language: string;
}
export interface PlanDay {
  title: string | null;
  items: PlanItem[];
}
export interface PlanPhase {
  name: string;
  days: PlanDay[];
}

/** What a version snapshots (and a draft holds). */
export interface PlanContent {
  name: string;
  description: string | null;
  phases: PlanPhase[];
  required_consents: string[];
  self_report: { pain: boolean; effort: boolean };
}

export interface PlanRow extends PlanContent {
  id: string;
  organization_id: string;
  kind: 'library' | 'patient';
  patient_id: string | null;
  version: number;
  published: boolean;
  published_at: Date;
  draft_author_principal_id: string | null;
  approved_by_principal_id: string | null;
  approved_at: Date | null;
  source_plan_id: string | null;
  source_version: number | null;
  source_kind: string | null;
  created_by_principal_id: string;
  created_at: Date;
  updated_at: Date;
}

/** treatment_plan_versions: the append-only snapshots, read as `plan`. */
export const planVersions = versionQueries<'plan', PlanContent>({
  table: 'treatment_plan_versions',
  parent: 'treatment_plan_id',
  snapshot: 'snapshot',
  as: 'plan',
});

const COLUMNS = `id, organization_id, kind, patient_id, name, description, phases, required_consents, self_report, version, published,
  published_at, draft_author_principal_id, approved_by_principal_id, approved_at, source_plan_id, source_version, source_kind,
  created_by_principal_id, created_at, updated_at`;

// Every statement names the organization: superadmins run on app_bypass, where no policy narrows rows.

export async function insertPlan(
  tx: Queryable,
  orgId: string,
  p: PlanContent & {
    kind: 'library' | 'patient';
    patient_id: string | null;
    created_by: string;
    source?: { plan_id: string; version: number | null; kind: 'duplicate' | 'clone' | 'promote' };
  },
): Promise<PlanRow> {
  try {
    const { rows } = await tx.query<PlanRow>(
      `insert into treatment_plans (organization_id, kind, patient_id, name, description, phases, required_consents, self_report,
         created_by_principal_id, source_plan_id, source_version, source_kind)
       values ($1, $2, $3, $4, $5, $6::jsonb, $7::text[], $8::jsonb, $9, $10, $11, $12) returning ${COLUMNS}`,
      [
        orgId,
        p.kind,
        p.patient_id,
        p.name,
        p.description,
        JSON.stringify(p.phases),
        p.required_consents,
        JSON.stringify(p.self_report),
        p.created_by,
        p.source?.plan_id ?? null,
        p.source?.version ?? null,
        p.source?.kind ?? null,
      ],
    );
    return rows[0]!;
  } catch (err) {
    // The patient's foreign key (organization, patient): no such patient record at this organization.
    if (pgErrorCode(err) === '23503' && String((err as Error).message).includes('patient'))
      throw errors.validation({ patient_id: 'no patient record with this id at the organization' });
    throw err;
  }
}

export async function findPlan(tx: Queryable, orgId: string, id: string, opts: { forUpdate?: boolean } = {}): Promise<PlanRow | null> {
  const { rows } = await tx.query<PlanRow>(
    `select ${COLUMNS} from treatment_plans where id = $1 and organization_id = $2 and deleted_at is null${opts.forUpdate ? ' for update' : ''}`,
    [id, orgId],
  );
  return rows[0] ?? null;
}

export async function savePlan(
  tx: Queryable,
  orgId: string,
  id: string,
  c: PlanContent,
  state: { version: number; published: boolean; publishedNow: boolean },
): Promise<PlanRow> {
  const { rows } = await tx.query<PlanRow>(
    `update treatment_plans set name = $3, description = $4, phases = $5::jsonb, required_consents = $6::text[], self_report = $7::jsonb,
       version = $8, published = $9, published_at = case when $10 then now() else published_at end
     where id = $1 and organization_id = $2 returning ${COLUMNS}`,
    [
      id,
      orgId,
      c.name,
      c.description,
      JSON.stringify(c.phases),
      c.required_consents,
      JSON.stringify(c.self_report),
      state.version,
      state.published,
      state.publishedNow,
    ],
  );
  return rows[0]!;
}

export async function approvePlan(tx: Queryable, orgId: string, id: string, principalId: string): Promise<PlanRow> {
  const { rows } = await tx.query<PlanRow>(
    `update treatment_plans set approved_by_principal_id = $3, approved_at = now() where id = $1 and organization_id = $2 returning ${COLUMNS}`,
    [id, orgId, principalId],
  );
  return rows[0]!;
}

/** Soft delete (read FOR UPDATE before: after it treatment_plans_read hides the row without data.view_deleted). */
export async function softDeletePlan(tx: Queryable, orgId: string, id: string): Promise<void> {
  await markDeleted(tx, 'treatment_plans', orgId, id);
}

export async function listPlans(
  tx: Queryable,
  orgId: string,
  f: {
    kind?: string | undefined;
    patientId?: string | undefined;
    published?: boolean | undefined;
    q?: string | undefined;
    created: DateRange;
    includeDeleted?: boolean;
  },
  sort: Sort,
  page: Pagination,
): Promise<{ rows: PlanRow[]; total: number }> {
  const where = new SqlWhere().add('organization_id = ?', orgId);
  if (!f.includeDeleted) where.add('deleted_at is null');
  where
    .optional('kind = ?', f.kind)
    .optional('patient_id = ?', f.patientId)
    .optional('published = ?', f.published)
    .dateRange('created_at', f.created);
  if (f.q) where.add('name ilike ?', containsPattern(f.q));
  const count = await tx.query<{ total: number }>(`select count(*)::int as total from treatment_plans where ${where.text}`, where.params);
  const { rows } = await tx.query<PlanRow>(
    `select ${COLUMNS} from treatment_plans where ${where.text} order by ${sort.sql} limit ${where.param(page.limit)} offset ${where.param(page.offset)}`,
    where.params,
  );
  return { rows, total: count.rows[0]!.total };
}

/** A live patient record of the organization (under the caller's policies). */
export async function livePatient(tx: Queryable, orgId: string, patientId: string): Promise<boolean> {
  const { rows } = await tx.query('select 1 from patients where organization_id = $1 and id = $2 and deleted_at is null', [
    orgId,
    patientId,
  ]);
  return rows.length > 0;
}

export interface ExerciseFacts {
  id: string;
  kind: 'reps_based' | 'duration_based';
  status: string;
  tracked_joints: string[] | null;
}

/** The exercises among `ids` the caller can see (the platform library and the organization's), with what the plan checks. */
export async function exerciseFacts(tx: Queryable, orgId: string, ids: string[]): Promise<ExerciseFacts[]> {
  const { rows } = await tx.query<ExerciseFacts>(
    `select e.id, e.kind, e.status,
            (select array(select jsonb_array_elements_text(m.definition->'tracked_joints')) from exercise_movements m where m.exercise_id = e.id) as tracked_joints
     from exercises e where e.id = any($1::uuid[]) and (e.organization_id is null or e.organization_id = $2)`,
    [ids, orgId],
  );
  return rows;
}

/** Consent purposes among `codes` that plans of this organization may require (the platform's, or its own). */
export async function usablePurposes(tx: Queryable, orgId: string, codes: string[]): Promise<string[]> {
  if (!codes.length) return [];
  const { rows } = await tx.query<{ code: string }>(
    `select code from consent_purposes where code = any($1::text[]) and legal_basis = 'consent' and scope = 'org'
       and (organization_id is null or organization_id = $2)`,
    [codes, orgId],
  );
  return rows.map((r) => r.code);
}

export interface SettingsRow {
  organization_id: string;
  enabled: boolean;
  require_plan_approval: boolean;
  intended_use_version: string | null;
  intended_use_accepted_at: Date | null;
  intended_use_accepted_by: string | null;
  updated_at: Date | null;
}

/** The organization's telerehab settings; defaults (disabled, no approval) when it never set them. */
export async function findSettings(tx: Queryable, orgId: string, opts: { forUpdate?: boolean } = {}): Promise<SettingsRow> {
  const text = `select organization_id, enabled, require_plan_approval, intended_use_version, intended_use_accepted_at, intended_use_accepted_by, updated_at
     from telerehab_settings where organization_id = $1${opts.forUpdate ? ' for update' : ''}`;
  const { rows } = await tx.query<SettingsRow>(text, [orgId], prepared(text));
  return (
    rows[0] ?? {
      organization_id: orgId,
      enabled: false,
      require_plan_approval: false,
      intended_use_version: null,
      intended_use_accepted_at: null,
      intended_use_accepted_by: null,
      updated_at: null,
    }
  );
}

/** The settings row, made (disabled) if the organization has none, and locked: two writers queue on it. */
export async function lockSettings(tx: Queryable, orgId: string): Promise<SettingsRow> {
  await tx.query('insert into telerehab_settings (organization_id) values ($1) on conflict do nothing', [orgId]);
  return findSettings(tx, orgId, { forUpdate: true });
}

export async function saveSettings(
  tx: Queryable,
  orgId: string,
  s: { enabled: boolean; require_plan_approval: boolean; accept: string | null },
  principalId: string,
): Promise<void> {
  await tx.query(
    `update telerehab_settings set enabled = $2, require_plan_approval = $3,
       intended_use_version = coalesce($4, intended_use_version),
       intended_use_accepted_at = case when $4::text is not null then now() else intended_use_accepted_at end,
       intended_use_accepted_by = case when $4::text is not null then $5::uuid else intended_use_accepted_by end,
       updated_by_principal_id = $5
     where organization_id = $1`,
    [orgId, s.enabled, s.require_plan_approval, s.accept, principalId],
  );
}
