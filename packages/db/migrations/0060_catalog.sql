-- The clinical directory and service catalog (spec 4.5 rows Specialties, Specialists, Service catalog;
-- docs/decisions.md "Catalog"). Every table follows DESIGN.md section 7: forced RLS with its policies
-- here, organization_id leading the primary key and every unique constraint, and foreign keys between
-- tenant tables carrying organization_id. A catalog entry that something else still uses is not
-- deleted (on delete restrict, 409 `<entity>_in_use` in the API); links owned by a deleted entry go with it.

-- Targets for organization-carrying foreign keys (their primary keys are the id alone).
create unique index specialists_org_id_key on specialists (organization_id, id);
create unique index locations_org_id_key on locations (organization_id, id);

-- Readers of the directory: staff of the organization in scope and its patients (spec 5.7, 5.8).
create or replace function app.in_current_org_directory() returns boolean
language sql stable as $$ select app.is_staff_at_current_org() or app.current_patient_id() is not null $$;
grant execute on function app.in_current_org_directory() to app_rls, app_bypass;

-- ---------------------------------------------------------------------------------------------
-- Specialties: what a specialist practises (physiotherapy, cardiology), a short code unique per org.
create table specialties (
  organization_id uuid not null references organizations (id) on delete cascade,
  id uuid not null default app.uuid_v7(),
  code text not null check (code ~ '^[a-z0-9](?:[a-z0-9_-]{0,62}[a-z0-9])?$'),
  name text not null check (length(btrim(name)) between 1 and 200 and name = btrim(name)),
  description text check (length(description) <= 2000),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (organization_id, id),
  unique (organization_id, code)
);
create index specialties_org_created_idx on specialties (organization_id, created_at desc, id desc);
create trigger specialties_touch before update on specialties for each row execute function app.touch_updated_at();
select app.secure_table('specialties');
create policy specialties_read on specialties for select to app_rls
  using (organization_id = (select app.current_org_id()) and (select app.in_current_org_directory()));
create policy specialties_write on specialties for all to app_rls
  using (organization_id = (select app.current_org_id()) and (select app.has_permission('services.manage')))
  with check (organization_id = (select app.current_org_id()) and (select app.has_permission('services.manage')));

-- ---------------------------------------------------------------------------------------------
-- What a specialist offers besides the profile of migration 0022: languages spoken (BCP 47 tags) and
-- whether the public booking page may list the specialist.
alter table specialists
  add column languages text[] not null default '{}' check (cardinality(languages) <= 20),
  add column bookable_online boolean not null default false;
grant update (languages, bookable_online) on specialists to app_rls, app_bypass;

-- Writes to a specialist's links follow the specialist's own update policy (specialists.update_org,
-- or update_self on one's own profile: the service decides which links a self-editor may change).
create or replace function app.may_edit_specialist(org uuid, specialist uuid) returns boolean
language sql stable as $$
  select org = app.current_org_id() and (
    app.has_permission('specialists.update_org')
    or (app.has_permission('specialists.update_self') and exists (
          select 1 from public.specialists s
          where s.organization_id = org and s.id = specialist and s.user_id = app.current_principal_id()))
  )
$$;
grant execute on function app.may_edit_specialist(uuid, uuid) to app_rls, app_bypass;
-- Readers of a specialist's working details (links, availability): staff with specialists.view, the
-- specialist itself, and the organization's patients (the directory, spec 5.8).
create or replace function app.may_read_specialist(org uuid, specialist uuid) returns boolean
language sql stable as $$
  select org = app.current_org_id() and (
    app.has_permission('specialists.view')
    or app.current_patient_id() is not null
    or exists (select 1 from public.specialists s
               where s.organization_id = org and s.id = specialist and s.user_id = app.current_principal_id())
  )
$$;
grant execute on function app.may_read_specialist(uuid, uuid) to app_rls, app_bypass;

create table specialist_specialties (
  organization_id uuid not null,
  specialist_id uuid not null,
  specialty_id uuid not null,
  primary key (organization_id, specialist_id, specialty_id),
  foreign key (organization_id, specialist_id) references specialists (organization_id, id) on delete cascade,
  foreign key (organization_id, specialty_id) references specialties (organization_id, id) on delete restrict
);
create index specialist_specialties_specialty_idx on specialist_specialties (organization_id, specialty_id);

create table specialist_locations (
  organization_id uuid not null,
  specialist_id uuid not null,
  location_id uuid not null,
  primary key (organization_id, specialist_id, location_id),
  foreign key (organization_id, specialist_id) references specialists (organization_id, id) on delete cascade,
  foreign key (organization_id, location_id) references locations (organization_id, id) on delete restrict
);
create index specialist_locations_location_idx on specialist_locations (organization_id, location_id);

-- ---------------------------------------------------------------------------------------------
-- The service catalog. Money: integer minor units with an ISO 4217 code (never a float); the service
-- layer checks the code against the runtime's currency list.
create table services (
  organization_id uuid not null references organizations (id) on delete cascade,
  id uuid not null default app.uuid_v7(),
  name text not null check (length(btrim(name)) between 1 and 200 and name = btrim(name)),
  description text check (length(description) <= 5000),
  duration_minutes integer not null check (duration_minutes between 5 and 1440),
  buffer_before_minutes integer not null default 0 check (buffer_before_minutes between 0 and 240),
  buffer_after_minutes integer not null default 0 check (buffer_after_minutes between 0 and 240),
  price_minor integer not null default 0 check (price_minor >= 0),
  currency text not null check (currency ~ '^[A-Z]{3}$'),
  mode text not null check (mode in ('in_person', 'video', 'phone')),
  min_notice_minutes integer not null default 0 check (min_notice_minutes between 0 and 525600),
  max_days_ahead integer not null default 90 check (max_days_ahead between 1 and 730),
  cancellation_window_minutes integer not null default 0 check (cancellation_window_minutes between 0 and 525600),
  is_public boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (organization_id, id)
);
create unique index services_org_name_key on services (organization_id, lower(name));
create index services_org_created_idx on services (organization_id, created_at desc, id desc);
create trigger services_touch before update on services for each row execute function app.touch_updated_at();

create table service_locations (
  organization_id uuid not null,
  service_id uuid not null,
  location_id uuid not null,
  primary key (organization_id, service_id, location_id),
  foreign key (organization_id, service_id) references services (organization_id, id) on delete cascade,
  foreign key (organization_id, location_id) references locations (organization_id, id) on delete restrict
);
create index service_locations_location_idx on service_locations (organization_id, location_id);

create table service_specialists (
  organization_id uuid not null,
  service_id uuid not null,
  specialist_id uuid not null,
  primary key (organization_id, service_id, specialist_id),
  foreign key (organization_id, service_id) references services (organization_id, id) on delete cascade,
  foreign key (organization_id, specialist_id) references specialists (organization_id, id) on delete cascade
);
create index service_specialists_specialist_idx on service_specialists (organization_id, specialist_id);

create table products (
  organization_id uuid not null references organizations (id) on delete cascade,
  id uuid not null default app.uuid_v7(),
  name text not null check (length(btrim(name)) between 1 and 200 and name = btrim(name)),
  sku text not null check (sku ~ '^[A-Z0-9][A-Z0-9._-]{0,63}$'),
  description text check (length(description) <= 5000),
  price_minor integer not null default 0 check (price_minor >= 0),
  currency text not null check (currency ~ '^[A-Z]{3}$'),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (organization_id, id),
  unique (organization_id, sku)
);
create index products_org_created_idx on products (organization_id, created_at desc, id desc);
create trigger products_touch before update on products for each row execute function app.touch_updated_at();

-- A plan bundles services (with quantities) and products, for one price, valid for a number of days
-- from purchase (a package of ten physiotherapy sessions and a brace).
create table service_plans (
  organization_id uuid not null references organizations (id) on delete cascade,
  id uuid not null default app.uuid_v7(),
  name text not null check (length(btrim(name)) between 1 and 200 and name = btrim(name)),
  description text check (length(description) <= 5000),
  price_minor integer not null default 0 check (price_minor >= 0),
  currency text not null check (currency ~ '^[A-Z]{3}$'),
  validity_days integer not null check (validity_days between 1 and 3660),
  is_public boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (organization_id, id)
);
create unique index service_plans_org_name_key on service_plans (organization_id, lower(name));
create index service_plans_org_created_idx on service_plans (organization_id, created_at desc, id desc);
create trigger service_plans_touch before update on service_plans for each row execute function app.touch_updated_at();

create table service_plan_services (
  organization_id uuid not null,
  plan_id uuid not null,
  service_id uuid not null,
  quantity integer not null check (quantity between 1 and 1000),
  primary key (organization_id, plan_id, service_id),
  foreign key (organization_id, plan_id) references service_plans (organization_id, id) on delete cascade,
  foreign key (organization_id, service_id) references services (organization_id, id) on delete restrict
);
create index service_plan_services_service_idx on service_plan_services (organization_id, service_id);

create table service_plan_products (
  organization_id uuid not null,
  plan_id uuid not null,
  product_id uuid not null,
  quantity integer not null check (quantity between 1 and 1000),
  created_at timestamptz not null default now(),
  primary key (organization_id, plan_id, product_id),
  foreign key (organization_id, plan_id) references service_plans (organization_id, id) on delete cascade,
  foreign key (organization_id, product_id) references products (organization_id, id) on delete restrict
);
create index service_plan_products_product_idx on service_plan_products (organization_id, product_id);

-- Catalog reads: services.view_org or services.manage; patients of the organization see public
-- services and plans (the portal's booking and purchase pages). Writes: services.manage.
create or replace function app.may_read_catalog() returns boolean
language sql stable as $$ select app.has_permission('services.view_org') or app.has_permission('services.manage') $$;
grant execute on function app.may_read_catalog() to app_rls, app_bypass;

do $$
declare
  t text;
begin
  foreach t in array array['services', 'service_plans'] loop
    perform app.secure_table(t::regclass);
    execute format($p$create policy %1$s_read on %1$s for select to app_rls using (
      organization_id = (select app.current_org_id())
      and ((select app.may_read_catalog()) or (is_public and (select app.current_patient_id()) is not null)))$p$, t);
  end loop;
  foreach t in array array['products'] loop
    perform app.secure_table(t::regclass);
    execute format($p$create policy %1$s_read on %1$s for select to app_rls
      using (organization_id = (select app.current_org_id()) and (select app.may_read_catalog()))$p$, t);
  end loop;
  -- Links are readable wherever the catalog is (the parent rows' policies decide what a patient sees).
  foreach t in array array['service_locations', 'service_specialists', 'service_plan_services', 'service_plan_products'] loop
    perform app.secure_table(t::regclass);
    execute format($p$create policy %1$s_read on %1$s for select to app_rls using (
      organization_id = (select app.current_org_id())
      and ((select app.may_read_catalog()) or (select app.current_patient_id()) is not null))$p$, t);
  end loop;
  foreach t in array array['services', 'service_plans', 'products', 'service_locations', 'service_specialists',
                           'service_plan_services', 'service_plan_products'] loop
    execute format($p$create policy %1$s_write on %1$s for all to app_rls
      using (organization_id = (select app.current_org_id()) and (select app.has_permission('services.manage')))
      with check (organization_id = (select app.current_org_id()) and (select app.has_permission('services.manage')))$p$, t);
  end loop;
  foreach t in array array['specialist_specialties', 'specialist_locations'] loop
    perform app.secure_table(t::regclass);
    execute format($p$create policy %1$s_read on %1$s for select to app_rls
      using (app.may_read_specialist(organization_id, specialist_id))$p$, t);
    execute format($p$create policy %1$s_write on %1$s for all to app_rls
      using (app.may_edit_specialist(organization_id, specialist_id))
      with check (app.may_edit_specialist(organization_id, specialist_id))$p$, t);
  end loop;
end $$;

-- ---------------------------------------------------------------------------------------------
-- Availability (spec 4.5 GET, PUT /v1/specialists/{id}/availability). Weekly rules are local
-- wall-clock times in an IANA zone, so 09:00 stays 09:00 across daylight-saving changes; the database
-- turns them into instants (AT TIME ZONE). A rule sits at a location the specialist is linked to.
create table availability_rules (
  organization_id uuid not null,
  id uuid not null default app.uuid_v7(),
  specialist_id uuid not null,
  location_id uuid not null,
  weekday smallint not null check (weekday between 1 and 7), -- ISO: 1 = Monday
  start_time time not null,
  end_time time not null,
  time_zone text not null check (length(time_zone) between 1 and 64),
  effective_from date,
  effective_until date,
  position smallint not null default 0,
  primary key (organization_id, id),
  check (end_time > start_time),
  check (effective_until is null or effective_from is null or effective_until >= effective_from),
  foreign key (organization_id, specialist_id, location_id)
    references specialist_locations (organization_id, specialist_id, location_id) on delete restrict
);
create index availability_rules_specialist_idx on availability_rules (organization_id, specialist_id, weekday);

-- Dated exceptions: time off (at one location, or everywhere when location_id is null; the whole day
-- when no times are given) and extra hours (at a location, with times).
create table availability_exceptions (
  organization_id uuid not null,
  id uuid not null default app.uuid_v7(),
  specialist_id uuid not null,
  kind text not null check (kind in ('time_off', 'extra_hours')),
  location_id uuid,
  date date not null,
  start_time time,
  end_time time,
  time_zone text not null check (length(time_zone) between 1 and 64),
  note text check (length(note) <= 500),
  position smallint not null default 0,
  primary key (organization_id, id),
  check ((start_time is null) = (end_time is null)),
  check (start_time is null or end_time > start_time),
  check (kind = 'time_off' or (location_id is not null and start_time is not null)),
  foreign key (organization_id, specialist_id) references specialists (organization_id, id) on delete cascade,
  foreign key (organization_id, specialist_id, location_id)
    references specialist_locations (organization_id, specialist_id, location_id) on delete restrict
);
create index availability_exceptions_specialist_idx on availability_exceptions (organization_id, specialist_id, date);

do $$
declare
  t text;
begin
  foreach t in array array['availability_rules', 'availability_exceptions'] loop
    perform app.secure_table(t::regclass);
    execute format($p$create policy %1$s_read on %1$s for select to app_rls
      using (app.may_read_specialist(organization_id, specialist_id))$p$, t);
    execute format($p$create policy %1$s_write on %1$s for all to app_rls
      using (app.may_edit_specialist(organization_id, specialist_id))
      with check (app.may_edit_specialist(organization_id, specialist_id))$p$, t);
  end loop;
end $$;

-- ---------------------------------------------------------------------------------------------
-- Default grants: the catalog is managed by the admin and read by every staff role (a specialist
-- needs to see what it delivers, the front desk what it books).
insert into role_permissions (role_id, permission_code, organization_id)
select r.id, g.code, r.organization_id
from roles r
join (values
  ('admin', 'services.view_org'),
  ('admin', 'services.manage'),
  ('specialist', 'services.view_org'),
  ('customer_support', 'services.view_org')
) as g (role_code, code) on g.role_code = r.code
where r.is_system
on conflict do nothing;
