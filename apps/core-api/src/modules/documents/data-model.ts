import { createHash } from 'node:crypto';
import type { Queryable } from '@clinic/db';
import { errors } from '@clinic/http-kit';
import type { FieldSnapshot, FormRow } from '../forms/queries.ts';
import type { LetterheadRow } from '../pdf-templates/queries.ts';
import type { DocumentData } from './render/layout.ts';
import * as q from './queries.ts';

/*
 * The data model a template's placeholders are bound to (docs/documents.md), built from the rows a
 * document is made from. Everything is a string by now: dates formatted, choices joined, private form
 * fields left out (a document may be published to the patient, who never sees them, spec 5.8).
 */

/** Canonical JSON: keys sorted at every level, so the same content always hashes the same. */
export function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object' && !(v instanceof Date))
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v instanceof Date ? v.toISOString() : (v ?? null));
}
export const sha256 = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');

const utc = (d: Date, seconds = false) =>
  `${d
    .toISOString()
    .slice(0, seconds ? 19 : 16)
    .replace('T', ' ')} UTC`;

function answerText(f: FieldSnapshot, v: unknown): string {
  if (v === undefined || v === null || v === '') return '—';
  if (f.field_type === 'boolean') return v ? 'Yes' : 'No';
  if (Array.isArray(v)) return v.join(', ');
  return String(v);
}

/**
 * The form snapshot whose SHA-256 a signed form's document prints: the form's id, title, template version,
 * status, signature (when and by which principal), each field snapshot it was made with and the values,
 * as canonical JSON (docs/documents.md shows how to recompute it from GET /v1/forms/{id}).
 */
export function formSnapshot(row: FormRow, fields: FieldSnapshot[]) {
  return {
    id: row.id,
    title: row.title,
    form_template_id: row.form_template_id,
    template_version: row.template_version,
    status: row.status,
    signed_at: row.signed_at ? new Date(row.signed_at).toISOString() : null,
    signed_by_principal_id: row.signed_by_principal_id,
    fields: fields.map((f) => ({
      key: f.key,
      label: f.label,
      version: f.version,
      field_type: f.field_type,
      custom_field_id: f.custom_field_id,
    })),
    values: row.values,
  };
}

export interface Sources {
  letterhead: LetterheadRow;
  lang: string;
  patient: q.PatientFacts;
}

export async function commonSources(tx: Queryable, orgId: string, patientId: string): Promise<Sources> {
  const { letterhead, lang, patient } = await q.commonFacts(tx, orgId, patientId);
  if (!patient) throw errors.notFound("The document's patient is not readable here.");
  return { letterhead, lang, patient };
}

function common(
  s: Sources,
  doc: { id: string; title: string; date: Date },
): Pick<DocumentData, 'values' | 'lang' | 'author' | 'letterhead'> {
  const p = s.patient;
  const full = [p.first_name, p.last_name].filter(Boolean).join(' ');
  return {
    values: {
      'organization.name': s.letterhead.name,
      'organization.address': s.letterhead.address_lines.join(', '),
      'organization.registration_numbers': s.letterhead.registration_numbers.join(' · '),
      'patient.full_name': full,
      'patient.first_name': p.first_name ?? '',
      'patient.last_name': p.last_name ?? '',
      'patient.date_of_birth': p.date_of_birth ?? '',
      'patient.record_number': p.external_record_number ?? '',
      'document.title': doc.title,
      'document.id': doc.id,
      'document.date': doc.date.toISOString().slice(0, 10),
    },
    lang: s.lang,
    author: s.letterhead.name,
    letterhead: {
      name: s.letterhead.name,
      address: s.letterhead.address_lines,
      registration: s.letterhead.registration_numbers,
      logo: s.letterhead.logo_asset_key ? 'logo' : null,
    },
  };
}

export function formData(
  s: Sources,
  doc: { id: string; title: string; date: Date },
  form: { row: FormRow; fields: FieldSnapshot[]; signerName: string | null; snapshotSha256: string },
): DocumentData {
  const c = common(s, doc);
  const { row } = form;
  const signed = row.status === 'signed' && row.signed_at;
  const signature = [
    { label: 'Status', value: signed ? 'Signed' : 'Not signed' },
    ...(signed
      ? [
          { label: 'Signed by', value: form.signerName ?? row.signed_by_principal_id ?? '' },
          { label: 'Signed at', value: utc(new Date(row.signed_at!), true) },
        ]
      : []),
    { label: 'Form snapshot SHA-256', value: form.snapshotSha256 },
  ];
  return {
    ...c,
    values: {
      ...c.values,
      'form.title': row.title,
      'form.status': row.status,
      'form.created_at': utc(new Date(row.created_at)),
      'form.template_version': String(row.template_version),
      'signature.status': signed ? 'Signed' : 'Not signed',
      'signature.signed_by': signed ? (form.signerName ?? '') : '',
      'signature.signed_at': signed ? utc(new Date(row.signed_at!), true) : '',
      'signature.sha256': form.snapshotSha256,
    },
    answers: form.fields.filter((f) => !f.private).map((f) => ({ label: f.label, value: answerText(f, row.values[f.key]) })),
    items: [],
    signature,
  };
}

export function appointmentData(
  s: Sources,
  doc: { id: string; title: string; date: Date },
  a: q.AppointmentFacts,
  input: { body?: string; items?: Record<string, string>[] },
): DocumentData {
  const c = common(s, doc);
  const place = a.location ?? (a.mode === 'video' ? 'Video visit' : a.mode === 'phone' ? 'Phone call' : '');
  return {
    ...c,
    values: {
      ...c.values,
      'appointment.date': a.date,
      'appointment.time': a.time,
      'appointment.time_zone': a.time_zone,
      'appointment.service': a.service,
      'appointment.location': place,
      'specialist.display_name': a.specialist_name ?? '',
      'specialist.title': a.specialist_title ?? '',
      'specialist.registration_number': a.specialist_registration ?? '',
      'document.body': input.body ?? '',
    },
    answers: [],
    items: input.items ?? [],
    signature: [],
  };
}
