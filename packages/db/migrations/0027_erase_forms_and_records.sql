-- Erasure covers the personal data of records and forms (docs/decisions.md, "GDPR erasure of records and
-- forms"): patients' names, date of birth, phone, staff notes and custom field values; specialist
-- profiles; the values and files of unsigned forms. Signed forms are clinical records the clinic must
-- retain (GDPR art. 17(3)(b) and (c), art. 9(2)(h)): they are kept whole, and so is the minimum that
-- says whose record they are (first name, last name, date of birth) on the soft-deleted patients row.
-- Blobs are never deleted inside a transaction: the form_files rows go, and the objects they named are
-- removed after commit by the caller (POST /v1/gdpr/erase) or by the hourly orphan sweep
-- (forms.orphan_files), which deletes every object no row names.

-- The forms guard of 0025 again, with one more exit: the owner (app.erase_user runs as the owner, never
-- a request role) may empty the values of an unsigned form that is already soft-deleted. Everything
-- else about a deleted or signed form still raises for every role.
create or replace function app.forms_signed_guard() returns trigger
language plpgsql as $$
begin
  if old.status = 'signed' then
    raise exception 'form % is signed and can no longer change', old.id using errcode = 'insufficient_privilege';
  end if;
  if tg_op = 'DELETE' then return old; end if;
  if (new.id, new.organization_id, new.patient_id, new.form_template_id, new.template_version, new.title, new.created_by_principal_id, new.created_at)
     is distinct from
     (old.id, old.organization_id, old.patient_id, old.form_template_id, old.template_version, old.title, old.created_by_principal_id, old.created_at) then
    raise exception 'forms: only values, signature and deletion change' using errcode = 'insufficient_privilege';
  end if;
  if old.deleted_at is not null then
    if current_user not in ('app_rls', 'app_bypass') and new."values" = '{}'::jsonb
       and (new.status, new.deleted_at, new.signed_at, new.signed_by_principal_id)
           is not distinct from (old.status, old.deleted_at, old.signed_at, old.signed_by_principal_id) then
      return new;
    end if;
    raise exception 'form % is deleted', old.id using errcode = 'insufficient_privilege';
  end if;
  -- Requests: filling needs forms.fill_org or ownership, deleting forms.delete_unsigned, signing
  -- forms.sign or ownership. Superadmins (app_bypass) pass as they pass every permission check.
  if current_user = 'app_rls' then
    if new.deleted_at is not null and not app.has_permission('forms.delete_unsigned') then
      raise exception 'forms: deleting needs forms.delete_unsigned' using errcode = 'insufficient_privilege';
    end if;
    if (new."values" is distinct from old."values" or new.status <> old.status)
       and not (app.has_permission('forms.fill_org') or (new.status <> old.status and app.has_permission('forms.sign'))
                or coalesce(old.patient_id = app.current_patient_id(), false)) then
      raise exception 'forms: filling or signing needs forms.fill_org, forms.sign or ownership' using errcode = 'insufficient_privilege';
    end if;
  end if;
  return new;
end $$;

-- The records a person's erasure reaches: every patients row of the person (whole account), or its row
-- at one clinic. Clears them and what hangs off them; returns what it did. Internal (called by
-- app.erase_user only): not granted to the application roles.
create or replace function app.erase_patient_records(target uuid, org uuid)
returns jsonb
language plpgsql security definer set search_path = public, pg_catalog, pg_temp as $$
declare
  files_removed jsonb;
  forms_erased jsonb;
  retained jsonb;
  records_cleared jsonb;
begin
  -- Files of unsigned forms (live or soft-deleted). The guard trigger refuses files of signed forms,
  -- and none are selected. asset_key is returned so the caller can delete the objects after commit.
  with d as (
    delete from form_files ff using forms f, patients p
    where ff.form_id = f.id and f.patient_id = p.id and f.status = 'pending'
      and p.user_id = target and (org is null or p.organization_id = org)
    returning ff.id, ff.organization_id, ff.form_id, ff.asset_key
  )
  select coalesce(jsonb_agg(to_jsonb(d) order by d.organization_id, d.id), '[]'::jsonb) into files_removed from d;

  -- Unsigned forms: values emptied and soft-deleted (snapshots and consent rows reference the row).
  with e as (
    update forms f set "values" = '{}'::jsonb, deleted_at = coalesce(f.deleted_at, now())
    from patients p
    where f.patient_id = p.id and f.status = 'pending'
      and p.user_id = target and (org is null or p.organization_id = org)
      and (f."values" <> '{}'::jsonb or f.deleted_at is null)
    returning f.id, f.organization_id
  )
  select coalesce(jsonb_agg(to_jsonb(e) order by e.organization_id, e.id), '[]'::jsonb) into forms_erased from e;

  -- Signed forms stay as signed (retention duty); reported so that the clinic can tell the person.
  select coalesce(jsonb_agg(jsonb_build_object('id', f.id, 'organization_id', f.organization_id) order by f.organization_id, f.id), '[]'::jsonb)
  into retained
  from forms f join patients p on p.id = f.patient_id
  where f.status = 'signed' and p.user_id = target and (org is null or p.organization_id = org);

  -- The records themselves: contact details, staff notes and custom field values always go; the name
  -- and date of birth stay only where a signed form needs them to say whose record it is.
  with c as (
    update patients p set
      phone = null, notes = null, custom_field_values = '{}'::jsonb,
      first_name = case when k.keep then p.first_name end,
      last_name = case when k.keep then p.last_name end,
      date_of_birth = case when k.keep then p.date_of_birth end
    from (select pp.id, exists (select 1 from forms f where f.patient_id = pp.id and f.status = 'signed') as keep
          from patients pp where pp.user_id = target and (org is null or pp.organization_id = org)) k
    where p.id = k.id
    returning p.id, p.organization_id, k.keep as identity_retained
  )
  select coalesce(jsonb_agg(to_jsonb(c) order by c.organization_id), '[]'::jsonb) into records_cleared from c;

  return jsonb_build_object('form_files_removed', files_removed, 'forms_erased', forms_erased,
                            'signed_forms_retained', retained, 'patient_records_cleared', records_cleared);
end $$;
revoke all on function app.erase_patient_records(uuid, uuid) from public;

-- app.erase_user of 0009 again (same checks, same anonymisation), now also erasing the records of
-- records and forms: the patients rows in scope and their forms (app.erase_patient_records) and, when the
-- account is anonymised, the person's specialist profiles (they would go with the memberships by
-- cascade; deleting them first lets the result count them). A clinic erasure of someone who is also
-- staff there leaves the specialist profile alone: it erases the patient, not the employee.
create or replace function app.erase_user(target uuid, org uuid, reason text)
returns jsonb
language plpgsql security definer set search_path = public, pg_catalog, pg_temp as $$
declare
  me uuid := app.current_principal_id();
  bypass boolean := current_setting('role', true) = 'app_bypass';
  withdrawn jsonb := '[]'::jsonb;
  patients_deleted jsonb;
  memberships_removed jsonb := '[]'::jsonb;
  specialists_removed jsonb := '[]'::jsonb;
  records jsonb;
  anonymise boolean;
  m record;
begin
  if me is null or target is null then
    raise exception 'no principal' using errcode = 'insufficient_privilege';
  end if;
  if not exists (select 1 from users u where u.id = target) then
    raise exception 'subject_not_found' using errcode = 'P0001';
  end if;
  if org is null then
    if not (target = me or bypass) then
      raise exception 'erase_not_allowed' using errcode = 'insufficient_privilege';
    end if;
    if (select kind from users where id = target) <> 'human' then
      raise exception 'not_human' using errcode = 'P0001';
    end if;
  else
    if not (bypass or (org = app.current_org_id() and app.has_permission('gdpr.erase_data'))) then
      raise exception 'erase_not_allowed' using errcode = 'insufficient_privilege';
    end if;
    if not exists (select 1 from patients p where p.organization_id = org and p.user_id = target) then
      raise exception 'subject_not_found' using errcode = 'P0001';
    end if;
    withdrawn := app.withdraw_all_consents(target, org, false, me, reason);
  end if;

  anonymise := org is null or not (
    exists (select 1 from memberships mm where mm.user_id = target)
    or exists (select 1 from patients p where p.user_id = target and p.deleted_at is null and p.organization_id <> org)
    or exists (select 1 from platform_memberships pm where pm.user_id = target));

  if anonymise then
    -- Never leave an organization without someone who can manage members (members module rule).
    for m in
      select mm.organization_id from memberships mm
      where mm.user_id = target
        and exists (select 1 from role_permissions rp where rp.role_id = mm.role_id and rp.permission_code = 'organizations.manage_members')
      order by mm.organization_id
    loop
      perform pg_advisory_xact_lock(7275003, hashtext(m.organization_id::text));
      if not exists (
        select 1 from memberships o join role_permissions rp on rp.role_id = o.role_id and rp.permission_code = 'organizations.manage_members'
        where o.organization_id = m.organization_id and o.user_id <> target) then
        raise exception 'last_admin:%', m.organization_id using errcode = 'P0001';
      end if;
    end loop;
    withdrawn := withdrawn || app.withdraw_all_consents(target, null, true, me, reason);
    with s as (delete from specialists s where s.user_id = target returning s.id, s.organization_id)
    select coalesce(jsonb_agg(to_jsonb(s) order by s.organization_id), '[]'::jsonb) into specialists_removed from s;
    with d as (delete from memberships mm where mm.user_id = target returning mm.organization_id, mm.role_id)
    select coalesce(jsonb_agg(to_jsonb(d) order by d.organization_id), '[]'::jsonb) into memberships_removed from d;
    delete from platform_memberships where user_id = target;
    update users set email = 'deleted-' || id || '@invalid', external_subject = null, preferred_language = null,
                     current_organization_id = null, confirmed = false
    where id = target;
  end if;

  with p as (
    update patients set deleted_at = now(), profile_shared = false
    where user_id = target and deleted_at is null and (anonymise or organization_id = org)
    returning id, organization_id
  )
  select coalesce(jsonb_agg(to_jsonb(p) order by p.organization_id), '[]'::jsonb) into patients_deleted from p;

  records := app.erase_patient_records(target, case when anonymise then null else org end);

  return jsonb_build_object('anonymised', anonymise, 'withdrawn', withdrawn,
                            'patients_deleted', patients_deleted, 'memberships_removed', memberships_removed,
                            'specialists_removed', specialists_removed) || records;
end $$;
revoke all on function app.erase_user(uuid, uuid, text) from public;
grant execute on function app.erase_user(uuid, uuid, text) to app_rls, app_bypass;
