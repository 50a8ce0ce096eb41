-- The professional profile of a specialist (GET, PUT /v1/specialists/{id}/profile), in the spirit of FHIR
-- Practitioner: gender, the licence or registration number of its professional body, qualifications
-- (title, institution, year), the year it started practising and a note for the public booking page.
alter table specialists
  add column gender text check (gender in ('female', 'male', 'other', 'unknown')),
  add column registration_number text check (length(btrim(registration_number)) between 1 and 64),
  add column qualifications jsonb not null default '[]' check (jsonb_typeof(qualifications) = 'array' and jsonb_array_length(qualifications) <= 30),
  add column practising_since integer check (practising_since between 1900 and 2200),
  add column booking_note text check (length(booking_note) <= 1000);
grant update (gender, registration_number, qualifications, practising_since, booking_note) on specialists to app_rls, app_bypass;
