import { createHash } from 'node:crypto';
import type { Database, Queryable } from '@clinic/db';
import { claimExportJob, failExportJob, finishExportJob, setExportProgress } from './queries.ts';

/** How long a finished archive can be downloaded; the worker's sweeps delete expired files. */
export const EXPORT_TTL_DAYS = 7;

/**
 * The sections of an export archive, in order: each is one query, run as the owner (the job runs
 * outside any request); `org` limits a clinic's export to what that clinic holds.
 */
const SECTIONS: { name: string; sql: (org: boolean) => string }[] = [
  {
    name: 'user',
    sql: () =>
      `select id, email, kind, confirmed, preferred_language, current_organization_id, last_activity, created_at, updated_at
       from users where id = $1`,
  },
  {
    name: 'platform_roles',
    sql: (org) => `select role, granted_at from platform_memberships where user_id = $1 ${org ? 'and false' : ''} order by role`,
  },
  {
    name: 'memberships',
    sql: (org) =>
      `select m.organization_id, o.name as organization_name, r.code as role_code, m.created_at
       from memberships m join organizations o on o.id = m.organization_id join roles r on r.id = m.role_id
       where m.user_id = $1 ${org ? 'and m.organization_id = $2' : ''} order by m.created_at`,
  },
  // Records and forms. A clinic's export (org) is handed to its controller, which answers
  // the request and applies any exemption itself: it holds everything, staff notes and private fields
  // included. The person's own export follows spec 5.8 as the API does: staff notes, private fields
  // and the principals who created or signed forms are left out (docs/decisions.md).
  {
    name: 'patient_records',
    sql: (org) =>
      `select p.id, p.organization_id, o.name as organization_name, p.first_name, p.last_name,
              to_char(p.date_of_birth, 'YYYY-MM-DD') as date_of_birth, p.phone, ${org ? 'p.notes,' : ''}
              p.profile_shared, p.deleted_at, p.created_at, p.updated_at
       from patients p join organizations o on o.id = p.organization_id
       where p.user_id = $1 ${org ? 'and p.organization_id = $2' : ''} order by p.created_at`,
  },
  {
    name: 'specialist_profiles',
    sql: (org) =>
      `select s.id, s.organization_id, o.name as organization_name, s.display_name, s.title, s.bio, s.contact_email, s.contact_phone,
              s.deleted_at, s.created_at, s.updated_at
       from specialists s join organizations o on o.id = s.organization_id
       where s.user_id = $1 ${org ? 'and s.organization_id = $2' : ''} order by s.created_at`,
  },
  {
    // Values are stored by custom field id; each is named by the key and label of the field's latest
    // published version (what the API shows).
    name: 'custom_field_values',
    sql: (org) =>
      `select r.record_type, r.record_id, r.organization_id, e.key as custom_field_id, v.fields_snapshot->>'key' as key,
              v.fields_snapshot->>'label' as label, coalesce((v.fields_snapshot->>'private')::boolean, false) as private, e.value
       from (select 'patient' as record_type, id as record_id, organization_id, custom_field_values as cfv, created_at from patients where user_id = $1
             union all
             select 'specialist', id, organization_id, custom_field_values, created_at from specialists where user_id = $1) r
       cross join lateral jsonb_each(r.cfv) e
       left join lateral (select cv.fields_snapshot from custom_field_versions cv
                          where cv.custom_field_id = case when e.key ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then e.key::uuid end
                          order by cv.version desc limit 1) v on true
       where true ${org ? 'and r.organization_id = $2' : "and not coalesce((v.fields_snapshot->>'private')::boolean, false)"}
       order by r.created_at, r.record_id, key`,
  },
  {
    name: 'forms',
    sql: (org) =>
      `select f.id, f.organization_id, f.patient_id, f.form_template_id, f.template_version, f.title, f.status,
              ${org ? 'f."values"' : `f."values" - coalesce((select array_agg(x.key) from form_field_snapshots x where x.form_id = f.id and x.private), '{}'::text[])`} as "values",
              (select coalesce(jsonb_agg(jsonb_build_object('key', x.key, 'label', x.label, 'field_type', x.field_type, 'options', x.options,
                                                            'required', x.required, 'private', x.private, 'custom_field_id', x.custom_field_id,
                                                            'version', x.version) order by x.position), '[]'::jsonb)
               from form_field_snapshots x where x.form_id = f.id ${org ? '' : 'and not x.private'}) as fields,
              ${org ? 'f.created_by_principal_id, f.signed_by_principal_id,' : ''} f.signed_at, f.deleted_at, f.created_at, f.updated_at
       from forms f join patients p on p.id = f.patient_id
       where p.user_id = $1 ${org ? 'and f.organization_id = $2' : ''} order by f.created_at, f.id`,
  },
  {
    // Metadata only: the bytes stay in the asset store (GET /v1/forms/{id}/files/{fileId}).
    name: 'form_files',
    sql: (org) =>
      `select ff.id, ff.form_id, ff.organization_id, ff.filename, ff.content_type, ff.size_bytes, ff.sha256, ff.created_at
       from form_files ff join forms f on f.id = ff.form_id join patients p on p.id = f.patient_id
       where p.user_id = $1 ${org ? 'and ff.organization_id = $2' : ''} order by ff.created_at, ff.id`,
  },
  // Appointments of the person's patient records (docs/decisions.md): a guest booking counts once the
  // clinic has tied it to the record, never by its email alone. The person's own export leaves out staff
  // notes and the staff who booked or cancelled, as the API does.
  {
    name: 'appointments',
    sql: (org) =>
      `select a.id, a.organization_id, o.name as organization_name, a.patient_id, a.service_id, s.name as service_name,
              a.specialist_id, a.location_id, a.starts_at, a.ends_at, a.mode, a.status, a.source, a.guest_name, a.guest_email,
              a.guest_phone, a.guest_consents, ${org ? 'a.notes, a.created_by_principal_id, a.cancelled_by_principal_id,' : ''}
              a.patient_note, a.rescheduled_from, a.rescheduled_to, a.cancelled_at, a.cancellation_reason, a.status_changed_at,
              a.created_at, a.updated_at
       from appointments a join patients p on p.organization_id = a.organization_id and p.id = a.patient_id
       join organizations o on o.id = a.organization_id
       join services s on s.organization_id = a.organization_id and s.id = a.service_id
       where p.user_id = $1 ${org ? 'and a.organization_id = $2' : ''} order by a.starts_at, a.id`,
  },
  {
    // Metadata only: the bytes stay in the asset store (GET /v1/appointments/{id}/files/{fileId}).
    name: 'appointment_files',
    sql: (org) =>
      `select f.id, f.appointment_id, f.organization_id, f.filename, f.content_type, f.size_bytes, f.sha256, f.uploaded_by, f.created_at
       from appointment_files f join appointments a on a.organization_id = f.organization_id and a.id = f.appointment_id
       join patients p on p.organization_id = a.organization_id and p.id = a.patient_id
       where p.user_id = $1 ${org ? 'and f.organization_id = $2' : ''} order by f.created_at, f.id`,
  },
  {
    // Documents made from the person's forms and appointments (docs/documents.md), metadata only: the PDF
    // stays in the asset store (GET /v1/documents/{id}/download). The person's own export lists the ones
    // published to it, as the API shows them; a clinic's export lists every one it holds.
    name: 'documents',
    sql: (org) =>
      `select d.id, d.organization_id, d.kind, d.source, d.form_id, d.appointment_id, d.patient_id, d.pdf_template_id, d.template_version,
              d.title, d.source_sha256, d.status, d.sha256, d.size_bytes, d.page_count, d.published_at, d.created_at, d.rendered_at
       from documents d join patients p on p.organization_id = d.organization_id and p.id = d.patient_id
       where p.user_id = $1 ${org ? 'and d.organization_id = $2' : 'and d.published_at is not null'} order by d.created_at, d.id`,
  },
  {
    name: 'appointment_reviews',
    sql: (org) =>
      `select r.id, r.appointment_id, r.organization_id, r.rating, r.comment, r.created_at
       from appointment_reviews r join patients p on p.organization_id = r.organization_id and p.id = r.patient_id
       where p.user_id = $1 ${org ? 'and r.organization_id = $2' : ''} order by r.created_at, r.id`,
  },
  // Telerehab (docs/telerehab.md): the plans written for the person, its enrollments with the version it
  // follows and its pauses, and its plan sessions with their results as stored (each with the scoring
  // algorithm's version, the software version and UDI-DI that produced it; results are the person's data
  // whether or not the clinic serves them in the API today). The person's own copy leaves out staff ids and
  // plan drafts (what it follows is the version snapshot of each enrollment), as the API does.
  {
    name: 'treatment_plans',
    sql: (org) =>
      `select tp.id, tp.organization_id, tp.patient_id, tp.name, tp.description, tp.phases, tp.required_consents, tp.self_report,
              tp.version, tp.published, tp.published_at, tp.draft_author_principal_id, tp.approved_by_principal_id, tp.approved_at,
              tp.source_plan_id, tp.source_version, tp.source_kind, tp.created_by_principal_id, tp.deleted_at, tp.created_at, tp.updated_at
       from treatment_plans tp join patients p on p.organization_id = tp.organization_id and p.id = tp.patient_id
       where tp.kind = 'patient' and p.user_id = $1 ${org ? 'and tp.organization_id = $2' : 'and false'} order by tp.created_at, tp.id`,
  },
  {
    name: 'treatment_enrollments',
    sql: (org) =>
      `select e.id, e.organization_id, e.patient_id, e.treatment_plan_id, e.plan_version, v.snapshot->>'name' as plan_name,
              v.snapshot as plan_version_content, e.status, to_char(e.start_date, 'YYYY-MM-DD') as start_date,
              e.weekdays::int[] as weekdays, e.time_zone, e.status_changed_at, e.cancel_reason, e.cancelled_at,
              ${org ? 'e.cancelled_by_principal_id, e.enrolled_by_principal_id,' : ''}
              (select coalesce(jsonb_agg(jsonb_build_object('paused_on', x.paused_on, 'resumed_on', x.resumed_on,
                        'pause_reason', x.pause_reason, 'resume_reason', x.resume_reason, 'paused_at', x.paused_at, 'resumed_at', x.resumed_at
                        ${org ? ", 'paused_by_principal_id', x.paused_by_principal_id, 'resumed_by_principal_id', x.resumed_by_principal_id" : ''})
                        order by x.paused_on, x.id), '[]'::jsonb)
               from treatment_enrollment_pauses x where x.organization_id = e.organization_id and x.enrollment_id = e.id) as pauses,
              e.created_at, e.updated_at
       from treatment_enrollments e join patients p on p.organization_id = e.organization_id and p.id = e.patient_id
       left join treatment_plan_versions v
         on v.organization_id = e.organization_id and v.treatment_plan_id = e.treatment_plan_id and v.version = e.plan_version
       where p.user_id = $1 ${org ? 'and e.organization_id = $2' : ''} order by e.created_at, e.id`,
  },
  {
    name: 'plan_sessions',
    sql: (org) =>
      `select s.id, s.organization_id, s.enrollment_id, s.patient_id, s.treatment_plan_id, s.plan_version, s.plan_day,
              to_char(s.scheduled_on, 'YYYY-MM-DD') as scheduled_on, s.item_index, s.exercise_id, x.name as exercise_name, s.status,
              s.exercise_session_id, s.starts, s.started_at, s.completed_at, s.skipped_at, s.skip_reason,
              s.rep_count, s.form_score, s.rom, s.duration_s, s.algorithm_version, s.software_version, s.udi_di,
              s.pain, s.effort, s.patient_note, ${org ? 's.acted_by_principal_id,' : ''} s.created_at, s.updated_at
       from plan_sessions s join patients p on p.organization_id = s.organization_id and p.id = s.patient_id
       join exercises x on x.id = s.exercise_id
       where p.user_id = $1 ${org ? 'and s.organization_id = $2' : ''} order by s.scheduled_on, s.item_index, s.id`,
  },
  // Messages and automations (docs/automations.md, GDPR): the messages sent to the person's records or
  // appointments, as GET /v1/messages shows them (the person's own copy without the provider's id and error
  // text, as the API gives a patient); the executions of the automation runs that targeted them (the
  // person's copy without the rule's name and error text: rules are the clinic's configuration, which
  // patients do not read); tags and segment memberships (tags, a staff label, in the clinic's copy only).
  {
    name: 'messages',
    sql: (org) =>
      `select m.id, m.organization_id, m.channel, m.purpose, m.template_id, m.patient_id, m.appointment_id, m.run_id, m.to_address,
              m.language, m.subject, m.body_text, m.status, m.provider, ${org ? 'm.provider_message_id, m.error,' : ''} m.attempts,
              m.created_at, m.sent_at, m.bounced_at
       from messages m join patients p on p.organization_id = m.organization_id
         and (p.id = m.patient_id
              or (m.patient_id is null and exists (select 1 from appointments ap where ap.organization_id = m.organization_id
                                                   and ap.id = m.appointment_id and ap.patient_id = p.id)))
       where p.user_id = $1 ${org ? 'and m.organization_id = $2' : ''} order by m.created_at, m.id`,
  },
  {
    name: 'automation_executions',
    sql: (org) =>
      `select e.id, e.organization_id, e.run_id, e.rule_id, ${org ? 'ru.name as rule_name, e.error,' : ''} e.rule_version, e.trigger_type,
              r.fired_at, r.patient_id, r.appointment_id, r.status as run_status, e.action_index, e.action_type, e.status,
              e.attempts, e.message_id, e.created_at
       from automation_executions e
       join automation_runs r on r.organization_id = e.organization_id and r.id = e.run_id
       join automation_rules ru on ru.organization_id = r.organization_id and ru.id = r.rule_id
       join patients p on p.organization_id = r.organization_id
         and (p.id = r.patient_id
              or (r.patient_id is null and exists (select 1 from appointments ap where ap.organization_id = r.organization_id
                                                   and ap.id = r.appointment_id and ap.patient_id = p.id)))
       where p.user_id = $1 ${org ? 'and e.organization_id = $2' : ''} order by e.created_at, e.id`,
  },
  {
    name: 'patient_tags',
    sql: (org) =>
      `select t.organization_id, t.patient_id, t.tag, t.created_at
       from patient_tags t join patients p on p.organization_id = t.organization_id and p.id = t.patient_id
       where p.user_id = $1 ${org ? 'and t.organization_id = $2' : 'and false'} order by t.created_at, t.tag`,
  },
  {
    name: 'segment_memberships',
    sql: (org) =>
      `select sm.organization_id, sm.segment_id, ${org ? 's.name as segment_name,' : ''} sm.patient_id, s.evaluated_at
       from segment_members sm
       join segments s on s.organization_id = sm.organization_id and s.id = sm.segment_id and s.current_evaluation_id = sm.evaluation_id
       join patients p on p.organization_id = sm.organization_id and p.id = sm.patient_id
       where p.user_id = $1 ${org ? 'and sm.organization_id = $2' : ''} order by s.evaluated_at, sm.segment_id`,
  },
  {
    name: 'consent_ledger',
    sql: (org) =>
      `select id, organization_id, purpose_code, purpose_version, source, source_form_id, granted_at, granted_by_principal_id,
              host(granted_via_ip) as granted_via_ip, withdrawn_at, withdrawn_by_principal_id, withdrawal_reason, created_at
       from consent_ledger where patient_profile_id = $1 ${org ? 'and organization_id = $2' : ''} order by granted_at, id`,
  },
  {
    name: 'processing_restrictions',
    sql: (org) =>
      `select id, organization_id, reason, restricted_at, restricted_by_principal_id, lifted_at, lifted_by_principal_id
       from gdpr_restrictions where user_id = $1 ${org ? 'and organization_id = $2' : ''} order by restricted_at`,
  },
  {
    // Who read the person's patient records (migration 0064), without the readers' addresses.
    name: 'access_log',
    sql: (org) =>
      `select l.id, l.organization_id, l.occurred_at, l.actor_user_id, l.action, l.target_id, l.action_context, l.context_id
       from patient_access_log l
       where l.patient_ids && (select coalesce(array_agg(p.id), '{}') from patients p where p.user_id = $1)
         ${org ? 'and l.organization_id = $2' : ''}
       order by l.occurred_at, l.id`,
  },
  {
    name: 'audit_entries',
    sql: (org) =>
      `select id, organization_id, actor_user_id, action, entity_type, entity_id, action_context, data, host(ip) as ip, created_at
       from audit_logs a
       where (a.actor_user_id = $1 or a.entity_id = $1 or a.entity_id in (select id from patients where user_id = $1)
              or (a.entity_type = 'consent' and a.data->>'patient_profile_id' = $1::text)
              or (a.entity_type = 'appointment' and a.entity_id in (select ap.id from appointments ap join patients p
                    on p.organization_id = ap.organization_id and p.id = ap.patient_id where p.user_id = $1))
              or (a.entity_type in ('treatment_plan', 'treatment_enrollment', 'plan_session')
                  and a.data->>'patient_id' in (select id::text from patients where user_id = $1)))
         ${org ? 'and a.organization_id = $2' : ''}
       order by a.created_at, a.id`,
  },
];

export interface ExportPayload {
  subject_user_id: string;
  organization_id: string | null;
}

/**
 * Builds the machine-readable archive of everything the platform holds about the subject (the whole
 * platform, or one clinic's part), reporting progress after each section.
 */
export async function buildExport(
  db: Queryable,
  jobId: string,
  p: ExportPayload,
  progress: (pct: number) => Promise<void>,
): Promise<Buffer> {
  const archive: Record<string, unknown> = {
    format: 'clinic-platform.gdpr-export',
    format_version: 1,
    job_id: jobId,
    generated_at: new Date().toISOString(),
    subject_user_id: p.subject_user_id,
    scope: p.organization_id ? { organization_id: p.organization_id } : 'platform',
  };
  const org = p.organization_id !== null;
  for (const [i, s] of SECTIONS.entries()) {
    const sql = s.sql(org);
    const { rows } = await db.query(sql, sql.includes('$2') ? [p.subject_user_id, p.organization_id] : [p.subject_user_id]);
    archive[s.name] = s.name === 'user' ? (rows[0] ?? null) : rows;
    await progress(Math.floor(((i + 1) / (SECTIONS.length + 1)) * 100));
  }
  return Buffer.from(JSON.stringify(archive, null, 2), 'utf8');
}

interface Logger {
  info(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface JobRunner {
  /** Looks for queued work now (after an enqueue commits) instead of at the next poll. */
  kick(): void;
  start(): void;
  /** Stops polling and waits for the job in progress. */
  stop(): Promise<void>;
}

/**
 * In-process runner of the `jobs` table (kind gdpr_export), started with the API. A job is claimed
 * with FOR UPDATE SKIP LOCKED, so several instances share the queue without running a job twice.
 * The worker's scheduled sweeps (gdpr/jobs.ts) recover stale jobs and delete expired archives.
 */
export function createJobRunner(db: Database, log: Logger, pollMs = 1000): JobRunner {
  let timer: NodeJS.Timeout | null = null;
  let stopped = true;
  let current: Promise<void> | null = null;
  let again = false;

  async function claim(): Promise<{ id: string; payload: ExportPayload } | null> {
    return claimExportJob<ExportPayload>(db);
  }

  async function runOne(job: { id: string; payload: ExportPayload }): Promise<void> {
    try {
      const file = await buildExport(db, job.id, job.payload, async (pct) => {
        await setExportProgress(db, job.id, pct);
      });
      const result = {
        file_name: `gdpr-export-${job.id}.json`,
        bytes: file.length,
        sha256: createHash('sha256').update(file).digest('hex'),
      };
      await finishExportJob(db, job.id, file, result, EXPORT_TTL_DAYS);
      log.info({ jobId: job.id, bytes: file.length }, 'gdpr export done');
    } catch (err) {
      log.error({ err, jobId: job.id }, 'gdpr export failed');
      await failExportJob(db, job.id, 'The export failed; request a new one.').catch(() => {});
    }
  }

  async function drain(): Promise<void> {
    do {
      again = false;
      for (let job = await claim(); job && !stopped; job = await claim()) await runOne(job);
    } while (again && !stopped);
  }

  function tick() {
    if (stopped) return;
    if (current) {
      again = true;
      return;
    }
    current = drain()
      .catch((err: unknown) => log.error({ err }, 'job runner poll failed'))
      .finally(() => {
        current = null;
      });
  }

  return {
    kick: () => setImmediate(tick),
    start() {
      if (!stopped) return;
      stopped = false;
      timer = setInterval(tick, pollMs);
      timer.unref();
      tick();
    },
    async stop() {
      stopped = true;
      if (timer) clearInterval(timer);
      timer = null;
      await current;
    },
  };
}
