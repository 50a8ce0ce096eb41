-- app.own_patient_id() and app.current_patient_id() of 0066 again: the same queries, the same answers, in
-- PL/pgSQL instead of SQL. As SQL functions with SECURITY DEFINER they are never inlined, and PostgreSQL parses,
-- rewrites and plans the body of such a function on every statement that calls it (and, for
-- current_patient_id, the nested own_patient_id's too). Row policies call them: patients_read_own does for
-- every row a staff member lists, so each GET /v1/patients paid about 0.3 ms of the database's CPU for them,
-- as much as the rest of its statements together (bench/directory.ts, docs/operations.md). PL/pgSQL keeps
-- the plans of its queries for the life of the connection.
create or replace function app.own_patient_id() returns uuid
language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
begin
  return (select p.id from public.patients p
          where p.organization_id = app.current_org_id() and p.user_id = app.current_principal_id() and p.deleted_at is null);
end $$;

create or replace function app.current_patient_id() returns uuid
language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
begin
  return coalesce(
    (select l.patient_id from public.caregiver_links l
       join public.patients p on p.organization_id = l.organization_id and p.id = l.patient_id
     where l.organization_id = app.current_org_id()
       and l.patient_id = nullif(current_setting('app.acting_patient_id', true), '')::uuid
       and l.caregiver_user_id = app.current_principal_id() and l.revoked_at is null and p.deleted_at is null),
    app.own_patient_id()
  );
end $$;
