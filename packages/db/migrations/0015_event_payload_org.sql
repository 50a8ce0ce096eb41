-- Every event payload names its organization (docs/events.md), whichever code emitted it (services,
-- triggers, the companion services' SQL): app.emit_event adds organization_id when the caller left it out.
create or replace function app.emit_event(p_organization_id uuid, p_type text, p_data jsonb)
returns uuid language sql security definer set search_path = pg_catalog, public as $$
  insert into public.domain_events (organization_id, type, data, principal_id)
  values (
    p_organization_id,
    p_type,
    case when p_organization_id is null then coalesce(p_data, '{}'::jsonb)
         else jsonb_build_object('organization_id', p_organization_id) || coalesce(p_data, '{}'::jsonb) end,
    app.current_principal_id()
  )
  returning id
$$;
