import type { Queryable } from '@clinic/db';
import type { LetterheadRow } from '../pdf-templates/queries.ts';
import type { Kind } from './render/layout.ts';

export interface DocumentRow {
  id: string;
  organization_id: string;
  kind: Kind;
  source: 'form' | 'appointment';
  form_id: string | null;
  appointment_id: string | null;
  patient_id: string;
  pdf_template_id: string;
  template_version: number;
  title: string;
  input: { body?: string; items?: Record<string, string>[] } | null;
  source_sha256: string;
  render_key: string;
  status: 'queued' | 'rendering' | 'ready' | 'failed';
  progress: number;
  error: string | null;
  asset_key: string | null;
  size_bytes: number | null;
  sha256: string | null;
  page_count: number | null;
  published_at: Date | null;
  published_by_principal_id: string | null;
  created_by_principal_id: string | null;
  created_at: Date;
  updated_at: Date;
  rendered_at: Date | null;
}

const COLUMNS = `id, organization_id, kind, source, form_id, appointment_id, patient_id, pdf_template_id, template_version, title, input,
  source_sha256, render_key, status, progress, error, asset_key, size_bytes::int as size_bytes, sha256, page_count, published_at,
  published_by_principal_id, created_by_principal_id, created_at, updated_at, rendered_at`;

// Every statement names the organization: superadmins run on app_bypass, where no policy narrows rows.

/** Inserts the document unless one with the same render key exists; returns the row and whether it is new. */
export async function insertDocument(
  tx: Queryable,
  d: Pick<
    DocumentRow,
    | 'organization_id'
    | 'kind'
    | 'source'
    | 'form_id'
    | 'appointment_id'
    | 'patient_id'
    | 'pdf_template_id'
    | 'template_version'
    | 'title'
    | 'input'
    | 'source_sha256'
    | 'render_key'
  > & { created_by_principal_id: string },
): Promise<{ row: DocumentRow; created: boolean }> {
  const { rows } = await tx.query<DocumentRow>(
    `insert into documents (organization_id, kind, source, form_id, appointment_id, patient_id, pdf_template_id, template_version, title,
       input, source_sha256, render_key, created_by_principal_id)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb, $11, $12, $13)
     on conflict (organization_id, render_key) do nothing returning ${COLUMNS}`,
    [
      d.organization_id,
      d.kind,
      d.source,
      d.form_id,
      d.appointment_id,
      d.patient_id,
      d.pdf_template_id,
      d.template_version,
      d.title,
      d.input === null ? null : JSON.stringify(d.input),
      d.source_sha256,
      d.render_key,
      d.created_by_principal_id,
    ],
  );
  if (rows[0]) return { row: rows[0], created: true };
  const existing = await findByRenderKey(tx, d.organization_id, d.render_key);
  if (!existing) throw new Error('document render key conflict without a visible row');
  return { row: existing, created: false };
}

export async function findByRenderKey(tx: Queryable, orgId: string, key: string): Promise<DocumentRow | null> {
  const { rows } = await tx.query<DocumentRow>(`select ${COLUMNS} from documents where organization_id = $1 and render_key = $2`, [
    orgId,
    key,
  ]);
  return rows[0] ?? null;
}

export async function findDocument(
  tx: Queryable,
  orgId: string,
  id: string,
  opts: { forUpdate?: boolean } = {},
): Promise<DocumentRow | null> {
  const { rows } = await tx.query<DocumentRow>(
    `select ${COLUMNS} from documents where organization_id = $1 and id = $2${opts.forUpdate ? ' for update' : ''}`,
    [orgId, id],
  );
  return rows[0] ?? null;
}

export async function listDocuments(tx: Queryable, orgId: string, by: { formId?: string; appointmentId?: string }): Promise<DocumentRow[]> {
  const { rows } = await tx.query<DocumentRow>(
    `select ${COLUMNS} from documents where organization_id = $1
       and ($2::uuid is null or form_id = $2) and ($3::uuid is null or appointment_id = $3)
     order by created_at desc, id desc limit 200`,
    [orgId, by.formId ?? null, by.appointmentId ?? null],
  );
  return rows;
}

export async function setProgress(tx: Queryable, orgId: string, id: string, status: 'rendering', progress: number): Promise<void> {
  await tx.query(
    `update documents set status = $3, progress = $4 where organization_id = $1 and id = $2 and status in ('queued', 'rendering')`,
    [orgId, id, status, progress],
  );
}

export async function markReady(
  tx: Queryable,
  orgId: string,
  id: string,
  r: { asset_key: string; size_bytes: number; sha256: string; page_count: number },
): Promise<DocumentRow | null> {
  const { rows } = await tx.query<DocumentRow>(
    `update documents set status = 'ready', progress = 100, error = null, asset_key = $3, size_bytes = $4, sha256 = $5, page_count = $6,
       rendered_at = now()
     where organization_id = $1 and id = $2 and status in ('queued', 'rendering') returning ${COLUMNS}`,
    [orgId, id, r.asset_key, r.size_bytes, r.sha256, r.page_count],
  );
  return rows[0] ?? null;
}

export async function markFailed(tx: Queryable, orgId: string, id: string, error: string): Promise<void> {
  await tx.query(
    `update documents set status = 'failed', error = $3 where organization_id = $1 and id = $2 and status in ('queued', 'rendering')`,
    [orgId, id, error.slice(0, 500)],
  );
}

/** A failed render may be asked for again: the same inputs, a fresh attempt. */
export async function requeue(tx: Queryable, orgId: string, id: string): Promise<void> {
  await tx.query(
    `update documents set status = 'queued', progress = 0, error = null where organization_id = $1 and id = $2 and status = 'failed'`,
    [orgId, id],
  );
}

export async function publish(tx: Queryable, orgId: string, id: string, principalId: string): Promise<void> {
  await tx.query('update documents set published_at = now(), published_by_principal_id = $3 where organization_id = $1 and id = $2', [
    orgId,
    id,
    principalId,
  ]);
}

/** The object of a document by id alone (the signed download route: its signature already proved access). */
export async function assetOf(tx: Queryable, id: string): Promise<{ asset_key: string; title: string; size_bytes: number } | null> {
  const { rows } = await tx.query<{ asset_key: string; title: string; size_bytes: number }>(
    `select asset_key, title, size_bytes::int as size_bytes from documents where id = $1 and status = 'ready'`,
    [id],
  );
  return rows[0] ?? null;
}

export async function knownAssetKeys(tx: Queryable, keys: string[]): Promise<string[]> {
  const { rows } = await tx.query<{ k: string }>('select asset_key as k from documents where asset_key = any($1::text[])', [keys]);
  return rows.map((r) => r.k);
}

export interface PatientFacts {
  id: string;
  user_id: string;
  first_name: string | null;
  last_name: string | null;
  date_of_birth: string | null;
  external_record_number: string | null;
}

/** How a principal is named on a document: its specialist profile here, else its email. */
export async function principalName(tx: Queryable, orgId: string, principalId: string): Promise<string | null> {
  const { rows } = await tx.query<{ name: string }>(
    `select coalesce((select s.display_name from specialists s where s.organization_id = $1 and s.user_id = u.id and s.deleted_at is null limit 1),
       u.email) as name from users u where u.id = $2`,
    [orgId, principalId],
  );
  return rows[0]?.name ?? null;
}

/**
 * What every document prints besides its source, in one statement: the letterhead (or the organization's
 * name), the organization's language and the patient (null when the caller may not read it).
 */
export async function commonFacts(
  tx: Queryable,
  orgId: string,
  patientId: string,
): Promise<{ letterhead: LetterheadRow; lang: string; patient: PatientFacts | null }> {
  const { rows } = await tx.query<LetterheadRow & { lang: string; p: PatientFacts | null }>(
    `select o.id as organization_id, coalesce(l.name, o.name) as name, coalesce(l.address_lines, '{}') as address_lines,
       coalesce(l.registration_numbers, '{}') as registration_numbers, l.logo_asset_key, l.logo_content_type, l.logo_sha256, l.updated_at,
       o.language_code as lang,
       (select jsonb_build_object('id', p.id, 'user_id', p.user_id, 'first_name', p.first_name, 'last_name', p.last_name,
                 'date_of_birth', to_char(p.date_of_birth, 'YYYY-MM-DD'), 'external_record_number', p.external_record_number)
        from patients p where p.organization_id = o.id and p.id = $2) as p
     from organizations o left join document_letterheads l on l.organization_id = o.id where o.id = $1`,
    [orgId, patientId],
  );
  const r = rows[0];
  if (!r) throw new Error(`organization ${orgId} is not readable`);
  const { lang, p, ...letterhead } = r;
  return { letterhead, lang, patient: p };
}

export interface AppointmentFacts {
  id: string;
  patient_id: string | null;
  status: string;
  mode: string;
  starts_at: Date;
  ends_at: Date;
  service: string;
  location: string | null;
  time_zone: string;
  date: string;
  time: string;
  specialist_id: string | null;
  specialist_name: string | null;
  specialist_title: string | null;
  specialist_registration: string | null;
}

/** The appointment as documents print it, its times in its location's zone (UTC for video and phone visits). */
export async function appointmentFacts(tx: Queryable, orgId: string, id: string): Promise<AppointmentFacts | null> {
  const { rows } = await tx.query<AppointmentFacts>(
    `select a.id, a.patient_id, a.status, a.mode, a.starts_at, a.ends_at, sv.name as service, l.name as location,
       coalesce(l.timezone, 'UTC') as time_zone,
       to_char(a.starts_at at time zone coalesce(l.timezone, 'UTC'), 'YYYY-MM-DD') as date,
       to_char(a.starts_at at time zone coalesce(l.timezone, 'UTC'), 'HH24:MI') || '-' ||
         to_char(a.ends_at at time zone coalesce(l.timezone, 'UTC'), 'HH24:MI') as time,
       a.specialist_id, sp.display_name as specialist_name, sp.title as specialist_title, sp.registration_number as specialist_registration
     from appointments a
     join services sv on sv.organization_id = a.organization_id and sv.id = a.service_id
     left join locations l on l.organization_id = a.organization_id and l.id = a.location_id
     left join specialists sp on sp.organization_id = a.organization_id and sp.id = a.specialist_id
     where a.organization_id = $1 and a.id = $2`,
    [orgId, id],
  );
  return rows[0] ?? null;
}
