-- Erasure reaches messages and automations (docs/automations.md, GDPR; docs/decisions.md,
-- "Automations"). In the erasure's scope (one clinic, or everywhere when the account is anonymised), for the
-- person's patient records and their appointments:
-- - messages keep their row (channel, purpose, template, run, status, provider, times: the trail and the
--   counts hold) and lose what says who and what: the address, the subject, the text and the provider's
--   error text. A message not yet out (sending, retrying) becomes 'erased', which no worker claims again;
-- - automation runs still queued end 'cancelled', each action they had not done recorded in the append-only
--   execution trail as skipped ("the person's data was erased"), so nothing more is sent and every action
--   still ends as one execution;
-- - the executions themselves never named a person (their run does, by record id, and the record is
--   anonymised by the functions this wraps); they stay as they are;
-- - the record's tags and its segment memberships go (derived data about the person).
-- Run and message rows keep the record and appointment ids: those rows are anonymised, not deleted, and the
-- keys are what stops a trigger from firing a second time for the same appointment.
-- The wrapped function runs last: it anonymises the records this one selects by user_id.
alter function app.erase_patient_records(uuid, uuid) rename to erase_patient_records_0093;
create function app.erase_patient_records(target uuid, org uuid)
returns jsonb
language plpgsql security definer set search_path = public, pg_catalog, pg_temp as $$
declare
  runs_cancelled integer;
  messages_cleared integer;
  tags_removed integer;
  memberships_removed integer;
begin
  -- Queued runs of the person's records or appointments: every action not yet done is skipped, the run ends.
  with r as (
    select x.organization_id, x.id, x.rule_id, x.rule_version, x.trigger_type, jsonb_array_length(ru.actions) as n, ru.actions
    from automation_runs x
    join automation_rules ru on ru.organization_id = x.organization_id and ru.id = x.rule_id
    where x.status = 'queued'
      and ((x.organization_id, x.patient_id) in (select p.organization_id, p.id from patients p where p.user_id = target and (org is null or p.organization_id = org))
           or (x.organization_id, x.appointment_id) in (select ap.organization_id, ap.id from appointments ap join patients p on p.organization_id = ap.organization_id and p.id = ap.patient_id
                 where p.user_id = target and (org is null or p.organization_id = org)))
    for update of x
  ), skipped as (
    insert into automation_executions (organization_id, run_id, rule_id, rule_version, trigger_type, action_index, action_type,
                                       status, attempts, error, message_id)
    select r.organization_id, r.id, r.rule_id, r.rule_version, r.trigger_type, i, r.actions -> i ->> 'type', 'skipped', 0,
           'the person''s data was erased (GDPR)',
           (select m.id from messages m where m.organization_id = r.organization_id and m.run_id = r.id and m.action_index = i)
    from r cross join lateral generate_series(0, r.n - 1) as i
    where not exists (select 1 from automation_executions e where e.organization_id = r.organization_id and e.run_id = r.id and e.action_index = i)
    on conflict (organization_id, run_id, action_index) do nothing
    returning 1
  ), done as (
    update automation_runs x set status = 'cancelled', finished_at = now(), last_error = 'the person''s data was erased (GDPR)'
    from r where x.organization_id = r.organization_id and x.id = r.id
    returning 1
  )
  select (select count(*) from done) into runs_cancelled;

  with c as (
    update messages m set to_address = null, subject = null, body_text = null, error = null, claimed_until = null,
      status = case when m.status in ('sending', 'retrying') then 'erased' else m.status end
    where ((m.organization_id, m.patient_id) in (select p.organization_id, p.id from patients p where p.user_id = target and (org is null or p.organization_id = org))
           or (m.organization_id, m.appointment_id) in (select ap.organization_id, ap.id from appointments ap join patients p on p.organization_id = ap.organization_id and p.id = ap.patient_id
                 where p.user_id = target and (org is null or p.organization_id = org)))
      and (m.to_address is not null or m.subject is not null or m.body_text is not null or m.error is not null
           or m.status in ('sending', 'retrying'))
    returning 1
  )
  select count(*) into messages_cleared from c;

  with d as (
    delete from patient_tags t using patients p
    where t.organization_id = p.organization_id and t.patient_id = p.id and p.user_id = target and (org is null or p.organization_id = org)
    returning 1
  )
  select count(*) into tags_removed from d;

  with d as (
    delete from segment_members sm using patients p
    where sm.organization_id = p.organization_id and sm.patient_id = p.id and p.user_id = target and (org is null or p.organization_id = org)
    returning 1
  )
  select count(*) into memberships_removed from d;

  return app.erase_patient_records_0093(target, org)
    || jsonb_build_object('automation_runs_cancelled', runs_cancelled, 'messages_cleared', messages_cleared,
                          'patient_tags_removed', tags_removed, 'segment_memberships_removed', memberships_removed);
end $$;
revoke all on function app.erase_patient_records(uuid, uuid) from public;
revoke all on function app.erase_patient_records_0093(uuid, uuid) from public;
