import type { Queryable } from '@clinic/db';
import type { DomainEvent } from '../../worker/types.ts';
import type { Action, Trigger } from './definition.ts';

/**
 * The worker's SQL for automations: making runs from events, from appointments whose offset has come and
 * from daily schedules; loading runs with everything their actions need; recording executions. The worker
 * runs as the owner (no tenant scope): every statement names the organization itself.
 */

export interface NewRunRef {
  organization_id: string;
  id: string;
}

/**
 * Runs for the events of an outbox pass: one per (active event rule of the event's organization and type,
 * event, target). The target is the event's patient, its appointment's patient, or (a guest booking) the
 * appointment itself. A pass that runs twice makes no second run (the unique key).
 */
export async function runsForEvents(tx: Queryable, events: DomainEvent[]): Promise<NewRunRef[]> {
  const relevant = events.filter((e) => e.organization_id);
  if (!relevant.length) return [];
  const { rows } = await tx.query<NewRunRef>(
    `with ev as (
       select x.id, x.organization_id, x.type, x.data, x.occurred_at,
              case when x.data ->> 'id' ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then (x.data ->> 'id')::uuid end as entity_id,
              case when x.data ->> 'patient_id' ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then (x.data ->> 'patient_id')::uuid end as data_patient_id
       from jsonb_to_recordset($1::jsonb) as x (id uuid, organization_id uuid, type text, data jsonb, occurred_at timestamptz)
     ), matched as (
       select ev.*, r.id as rule_id, r.version as rule_version,
              case when ev.type like 'appointment.%' then ev.entity_id end as appointment_id
       from ev join automation_rules r
         on r.organization_id = ev.organization_id and r.event_type = ev.type
        and r.trigger_type = 'event' and r.status = 'active' and r.deleted_at is null
     ), targeted as (
       select m.*, case
           when m.appointment_id is not null then (select a.patient_id from appointments a where a.organization_id = m.organization_id and a.id = m.appointment_id)
           when m.data_patient_id is not null then m.data_patient_id
           when m.type like 'patient.%' then m.entity_id
         end as patient_id
       from matched m
     )
     insert into automation_runs (organization_id, rule_id, rule_version, trigger_type, trigger_key, target_key, patient_id, appointment_id, fired_at)
     select t.organization_id, t.rule_id, t.rule_version, 'event', 'event:' || t.id,
            case when t.patient_id is not null then 'patient:' || t.patient_id else 'appointment:' || t.appointment_id end,
            t.patient_id, t.appointment_id, t.occurred_at
     from targeted t
     where (t.patient_id is not null and exists (select 1 from patients p where p.organization_id = t.organization_id and p.id = t.patient_id))
        or (t.patient_id is null and t.appointment_id is not null
            and exists (select 1 from appointments a where a.organization_id = t.organization_id and a.id = t.appointment_id))
     on conflict (organization_id, rule_id, trigger_key, target_key) do nothing
     returning organization_id, id`,
    [
      JSON.stringify(
        relevant.map((e) => ({ id: e.id, organization_id: e.organization_id, type: e.type, data: e.data, occurred_at: e.occurred_at })),
      ),
    ],
  );
  return rows;
}

/**
 * Runs of appointment-offset rules that have come due. The trigger key names the appointment and its start,
 * and only appointments that can still happen are looked at (scheduled or confirmed, for an offset before
 * the start; under way or done, for one after it), so a cancelled appointment never gets its reminder and a
 * moved one (a new appointment with the new time) gets its own at the new time. Before the start: due from
 * start + offset until the start (a rule made or resumed at noon reminds tomorrow morning's patients at once,
 * and a booking made less than a day ahead gets its reminder at once). After it: due from start + offset,
 * for at most a day.
 */
export async function dueAppointmentRuns(tx: Queryable): Promise<NewRunRef[]> {
  const { rows } = await tx.query<NewRunRef>(
    `insert into automation_runs (organization_id, rule_id, rule_version, trigger_type, trigger_key, target_key, patient_id, appointment_id, fired_at)
     select r.organization_id, r.id, r.version, 'appointment_offset',
            'appointment:' || a.id || '@' || to_char(a.starts_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
            coalesce('patient:' || a.patient_id, 'appointment:' || a.id),
            a.patient_id, a.id, a.starts_at + make_interval(mins => r.offset_minutes)
     from automation_rules r
     join appointments a on a.organization_id = r.organization_id
      and a.starts_at <= now() - make_interval(mins => r.offset_minutes)
      and a.starts_at > (case when r.offset_minutes < 0 then now() else now() - make_interval(mins => r.offset_minutes) - interval '1 day' end)
      and a.status = any(case when r.offset_minutes < 0 then '{scheduled,confirmed}'::text[] else '{checked_in,in_progress,done}'::text[] end)
      and (r."trigger" -> 'service_ids' is null or r."trigger" -> 'service_ids' ? a.service_id::text)
     where r.trigger_type = 'appointment_offset' and r.status = 'active' and r.deleted_at is null
     on conflict (organization_id, rule_id, trigger_key, target_key) do nothing
     returning organization_id, id`,
  );
  return rows;
}

/**
 * Runs of schedule rules whose local time has come today (in the organization's zone): one per member of
 * the segment as its criteria say now (compiled by the caller: `criteria` is the SQL over `p`, its
 * parameters from $4 on). The key is the local date, so a day has one run per member however often this runs.
 */
export async function scheduledRuns(
  tx: Queryable,
  rule: { organization_id: string; id: string; version: number },
  localDate: string,
  criteria: { sql: string; params: unknown[] },
): Promise<NewRunRef[]> {
  const { rows } = await tx.query<NewRunRef>(
    `insert into automation_runs (organization_id, rule_id, rule_version, trigger_type, trigger_key, target_key, patient_id)
     select p.organization_id, $2, $3, 'schedule', 'schedule:' || $4::text, 'patient:' || p.id, p.id
     from patients p where p.organization_id = $1 and p.deleted_at is null and (${criteria.sql})
     on conflict (organization_id, rule_id, trigger_key, target_key) do nothing
     returning organization_id, id`,
    [rule.organization_id, rule.id, rule.version, localDate, ...criteria.params],
  );
  return rows;
}

/** Schedule rules whose time of day has passed in their organization's zone, with today's local date. */
export async function dueScheduleRules(tx: Queryable) {
  const { rows } = await tx.query<{
    organization_id: string;
    id: string;
    version: number;
    segment_id: string;
    local_date: string;
  }>(
    `select r.organization_id, r.id, r.version, r."trigger" ->> 'segment_id' as segment_id,
            to_char((now() at time zone z.zone)::date, 'YYYY-MM-DD') as local_date
     from automation_rules r
     cross join lateral (select coalesce((select default_timezone from organization_settings s where s.organization_id = r.organization_id), 'UTC') as zone) z
     where r.trigger_type = 'schedule' and r.status = 'active' and r.deleted_at is null
       and (now() at time zone z.zone)::time >= (r."trigger" ->> 'time')::time
       and not exists (select 1 from automation_runs x where x.organization_id = r.organization_id and x.rule_id = r.id
                         and x.trigger_key = 'schedule:' || to_char((now() at time zone z.zone)::date, 'YYYY-MM-DD'))`,
  );
  return rows;
}

export async function segmentCriteria(tx: Queryable, orgId: string, segmentId: string): Promise<unknown | null> {
  const { rows } = await tx.query<{ criteria: unknown }>('select criteria from segments where organization_id = $1 and id = $2', [
    orgId,
    segmentId,
  ]);
  return rows[0]?.criteria ?? null;
}

/**
 * Queued runs nobody has acted on for a while (their job was lost: retries used up by repeated crashes):
 * handed out again. A run waiting for quiet hours or a retry has its not_before in the future.
 */
export async function staleRuns(tx: Queryable, limit: number): Promise<NewRunRef[]> {
  const { rows } = await tx.query<NewRunRef>(
    `with s as (
       select organization_id, id from automation_runs where status = 'queued' and not_before < now() - interval '10 minutes'
       order by not_before limit $1 for update skip locked
     )
     update automation_runs r set not_before = now() from s where r.organization_id = s.organization_id and r.id = s.id
     returning r.organization_id, r.id`,
    [limit],
  );
  return rows;
}

export interface LoadedRun {
  organization_id: string;
  id: string;
  rule_id: string;
  rule_version: number;
  trigger_type: string;
  trigger_key: string;
  patient_id: string | null;
  appointment_id: string | null;
  status: string;
  not_before: Date;
  rule_status: string;
  rule_deleted: boolean;
  rule_trigger: Trigger;
  actions: Action[];
  conditions: Record<string, unknown> | null;
  rule_owner: string | null;
  org_name: string;
  calendar_title: string;
  org_language: string;
  org_zone: string;
  quiet_until: Date | null;
  user_id: string | null;
  first_name: string | null;
  last_name: string | null;
  email: string | null;
  phone: string | null;
  preferred_language: string | null;
  patient_live: boolean;
  appointment_status: string | null;
  starts_at: Date | null;
  ends_at: Date | null;
  guest_name: string | null;
  guest_email: string | null;
  guest_phone: string | null;
  service_name: string | null;
  specialist_name: string | null;
  location_name: string | null;
  location_zone: string | null;
  done_actions: number[];
}

/** The runs of a batch with their rule, organization, quiet hours, target and appointment, in one statement. */
export async function loadRuns(tx: Queryable, refs: NewRunRef[]): Promise<LoadedRun[]> {
  if (!refs.length) return [];
  const { rows } = await tx.query<LoadedRun>(
    `select r.organization_id, r.id, r.rule_id, r.rule_version, r.trigger_type, r.trigger_key, r.patient_id, r.appointment_id, r.status, r.not_before,
            ru.status as rule_status, ru.deleted_at is not null as rule_deleted, ru."trigger" as rule_trigger, ru.actions, ru.conditions,
            ru.created_by_principal_id as rule_owner,
            o.name as org_name, o.language_code as org_language,
            coalesce((select s.calendar_title from organization_settings s where s.organization_id = r.organization_id), 'clinic') as calendar_title, z.zone as org_zone,
            case when st.quiet_hours_start is null then null
                 when (st.quiet_hours_start < st.quiet_hours_end and lt.t >= st.quiet_hours_start and lt.t < st.quiet_hours_end)
                   or (st.quiet_hours_start > st.quiet_hours_end and (lt.t >= st.quiet_hours_start or lt.t < st.quiet_hours_end))
                 then (date_trunc('day', now() at time zone z.zone)
                       + case when lt.t < st.quiet_hours_end then interval '0' else interval '1 day' end + st.quiet_hours_end) at time zone z.zone
            end as quiet_until,
            p.user_id, p.first_name, p.last_name, p.user_email as email, p.phone, p.preferred_language,
            (p.id is not null and p.deleted_at is null) as patient_live,
            a.status as appointment_status, a.starts_at, a.ends_at, a.guest_name, a.guest_email, a.guest_phone,
            sv.name as service_name, sp.display_name as specialist_name, l.name as location_name, l.timezone as location_zone,
            coalesce((select array_agg(e.action_index) from automation_executions e where e.organization_id = r.organization_id and e.run_id = r.id), '{}') as done_actions
     from unnest($1::uuid[], $2::uuid[]) as ref (organization_id, id)
     join automation_runs r on r.organization_id = ref.organization_id and r.id = ref.id
     join automation_rules ru on ru.organization_id = r.organization_id and ru.id = r.rule_id
     join organizations o on o.id = r.organization_id
     cross join lateral (select coalesce((select default_timezone from organization_settings s where s.organization_id = r.organization_id), 'UTC') as zone) z
     cross join lateral (select (now() at time zone z.zone)::time as t) lt
     left join automation_settings st on st.organization_id = r.organization_id
     left join patients p on p.organization_id = r.organization_id and p.id = r.patient_id
     left join appointments a on a.organization_id = r.organization_id and a.id = r.appointment_id
     left join services sv on sv.organization_id = a.organization_id and sv.id = a.service_id
     left join specialists sp on sp.organization_id = a.organization_id and sp.id = a.specialist_id
     left join locations l on l.organization_id = a.organization_id and l.id = a.location_id`,
    [refs.map((r) => r.organization_id), refs.map((r) => r.id)],
  );
  return rows;
}

/**
 * Records an action's execution, first thing in its transaction: false when it is already recorded (a
 * retry, or another worker), in which case the caller does nothing more. The unique key makes a concurrent
 * second recorder wait for the first and then find it.
 */
export async function recordExecution(
  tx: Queryable,
  run: LoadedRun,
  e: {
    index: number;
    type: string;
    status: 'succeeded' | 'failed' | 'skipped';
    attempts: number;
    error: string | null;
    messageId: string | null;
  },
): Promise<boolean> {
  const { rows } = await tx.query(
    `insert into automation_executions (organization_id, run_id, rule_id, rule_version, trigger_type, action_index, action_type, status, attempts, error, message_id)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
     on conflict (organization_id, run_id, action_index) do nothing returning id`,
    [
      run.organization_id,
      run.id,
      run.rule_id,
      run.rule_version,
      run.trigger_type,
      e.index,
      e.type,
      e.status,
      e.attempts,
      e.error?.slice(0, 1000) ?? null,
      e.messageId,
    ],
  );
  return rows.length > 0;
}

export async function finishRun(tx: Queryable, run: LoadedRun, status: 'done' | 'cancelled', error: string | null = null): Promise<void> {
  await tx.query(
    `update automation_runs set status = $3, finished_at = now(), last_error = coalesce($4, last_error) where organization_id = $1 and id = $2 and status = 'queued'`,
    [run.organization_id, run.id, status, error],
  );
}

/** A run that must wait (quiet hours, a retry): its job runs again at `at`. */
export async function deferRun(tx: Queryable, run: LoadedRun, at: Date, error: string | null): Promise<void> {
  await tx.query(
    `update automation_runs set not_before = $3, attempts = attempts + 1, last_error = coalesce($4, last_error) where organization_id = $1 and id = $2`,
    [run.organization_id, run.id, at, error],
  );
}

/** The appointment of a run, locked against a concurrent cancellation while the send is claimed. */
export async function lockAppointment(tx: Queryable, orgId: string, id: string): Promise<{ status: string; starts_at: Date } | null> {
  const { rows } = await tx.query<{ status: string; starts_at: Date }>(
    'select status, starts_at from appointments where organization_id = $1 and id = $2 for share',
    [orgId, id],
  );
  return rows[0] ?? null;
}

export async function addTag(tx: Queryable, orgId: string, patientId: string, tag: string): Promise<void> {
  await tx.query('insert into patient_tags (organization_id, patient_id, tag) values ($1, $2, $3) on conflict do nothing', [
    orgId,
    patientId,
    tag,
  ]);
}

export async function evaluateConditions(
  tx: Queryable,
  orgId: string,
  patientId: string,
  compiled: { sql: string; params: unknown[] },
): Promise<boolean> {
  const { rows } = await tx.query<{ ok: boolean }>(
    `select exists (select 1 from patients p where p.organization_id = $1 and p.id = $2 and (${compiled.sql})) as ok`,
    [orgId, patientId, ...compiled.params],
  );
  return rows[0]!.ok;
}
