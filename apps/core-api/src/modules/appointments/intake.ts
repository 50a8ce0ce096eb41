import type { Queryable } from '@clinic/db';
import { errors } from '@clinic/http-kit';
import { valueProblem } from '../custom-fields/definition.ts';
import { latestPublished } from '../custom-fields/queries.ts';
import { findTemplate, templateVersions } from '../form-templates/queries.ts';

/** One question of an intake: the field as it was published when the booking answered it. */
export interface IntakeField {
  custom_field_id: string;
  version: number;
  key: string;
  label: string;
  field_type: string;
  options: string[];
  required: boolean;
}

export interface Intake {
  templateId: string;
  templateVersion: number;
  fields: IntakeField[];
  answers: Record<string, unknown>;
}

/**
 * The questions of an intake form as a booking would answer them now: the template's latest published
 * version, each field at its latest published version. Null without a template (or a published version).
 */
export async function intakeForm(
  tx: Queryable,
  orgId: string,
  templateId: string | null,
): Promise<{ templateId: string; templateVersion: number; fields: IntakeField[] } | null> {
  const template = templateId ? await findTemplate(tx, orgId, templateId) : null;
  const version = template ? await templateVersions.find(tx, orgId, template.id, null) : null;
  if (!template || !version) return null;
  const spec = version.template.fields;
  const published = new Map(
    (await latestPublished(tx, orgId, { entityType: 'form', ids: spec.map((f) => f.custom_field_id) })).map((f) => [f.custom_field_id, f]),
  );
  const fields: IntakeField[] = spec.flatMap((s) => {
    const f = published.get(s.custom_field_id);
    return f
      ? [
          {
            custom_field_id: f.custom_field_id,
            version: f.version,
            key: f.key,
            label: f.label,
            field_type: f.field_type,
            options: f.options,
            required: s.required,
          },
        ]
      : [];
  });
  return { templateId: template.id, templateVersion: version.version, fields };
}

/**
 * The answers of a booking to its service's intake form (the template's latest published version, each
 * field at its latest published version), checked as a form's values are: every required field answered,
 * each value valid for its type, no unknown key. Problems are 422 with `fields` (`intake.<key>`). A
 * service without an intake form (or whose template was deleted) takes none.
 */
export async function intakeOf(
  tx: Queryable,
  orgId: string,
  templateId: string | null,
  answers: Record<string, unknown> | undefined,
): Promise<Intake | null> {
  const form = await intakeForm(tx, orgId, templateId);
  if (!form) {
    if (answers && Object.keys(answers).length) throw errors.queryValidation({ intake: 'this service has no intake form' });
    return null;
  }
  const { fields } = form;
  const given = answers ?? {};
  const problems: Record<string, string> = {};
  const out: Record<string, unknown> = {};
  const byKey = new Map(fields.map((f) => [f.key, f]));
  for (const key of Object.keys(given)) if (!byKey.has(key)) problems[`intake.${key}`] = 'not a question of this intake form';
  for (const f of fields) {
    const value = given[f.key] ?? null;
    const why = valueProblem(f as Parameters<typeof valueProblem>[0], value);
    if (why) problems[`intake.${f.key}`] = why;
    else if (value === null && f.required) problems[`intake.${f.key}`] = 'required';
    else if (value !== null) out[f.key] = value;
  }
  if (Object.keys(problems).length) throw errors.queryValidation(problems, 'The intake form is not complete; see fields.');
  return { templateId: form.templateId, templateVersion: form.templateVersion, fields, answers: out };
}
