-- Domain events for changes that happen on several paths (API routes, SQL cascades such as leaving a
-- clinic or erasing an account, the CLI): emitted by triggers, so every path emits them, in the
-- transaction of the change (docs/events.md). Payloads carry ids and states, no personal data.

create or replace function app.emit_membership_event() returns trigger
language plpgsql as $$
begin
  if tg_op = 'INSERT' then
    perform app.emit_event(new.organization_id, 'member.added', jsonb_build_object(
      'organization_id', new.organization_id, 'user_id', new.user_id, 'role_id', new.role_id,
      'role_code', (select code from public.roles where id = new.role_id)));
  elsif tg_op = 'UPDATE' then
    if new.role_id is distinct from old.role_id then
      perform app.emit_event(new.organization_id, 'member.role_changed', jsonb_build_object(
        'organization_id', new.organization_id, 'user_id', new.user_id, 'role_id', new.role_id,
        'role_code', (select code from public.roles where id = new.role_id),
        'previous_role_code', (select code from public.roles where id = old.role_id)));
    end if;
  else
    perform app.emit_event(old.organization_id, 'member.removed', jsonb_build_object(
      'organization_id', old.organization_id, 'user_id', old.user_id));
  end if;
  return null;
end $$;
create trigger memberships_events after insert or update of role_id or delete on memberships
  for each row execute function app.emit_membership_event();

-- Consent: a new ledger row is a grant; withdrawn_at moving from null is a withdrawal (the only change
-- the ledger allows). Platform-scope rows (no organization) go to internal consumers only.
create or replace function app.emit_consent_event() returns trigger
language plpgsql as $$
begin
  if tg_op = 'INSERT' then
    perform app.emit_event(new.organization_id, 'consent.granted', jsonb_build_object(
      'organization_id', new.organization_id, 'consent_id', new.id, 'patient_profile_id', new.patient_profile_id,
      'purpose_code', new.purpose_code, 'purpose_version', new.purpose_version, 'source', new.source));
  elsif old.withdrawn_at is null and new.withdrawn_at is not null then
    perform app.emit_event(new.organization_id, 'consent.withdrawn', jsonb_build_object(
      'organization_id', new.organization_id, 'consent_id', new.id, 'patient_profile_id', new.patient_profile_id,
      'purpose_code', new.purpose_code));
  end if;
  return null;
end $$;
create trigger consent_ledger_events after insert or update of withdrawn_at on consent_ledger
  for each row execute function app.emit_consent_event();
