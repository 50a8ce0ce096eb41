-- Exercise library completed: organizations' copies of platform exercises.
--
-- A platform exercise (organization_id null) is usable by every organization as it is. Propagating it
-- (POST /v1/exercises/{id}/propagate, superadmins) also gives chosen organizations their own copy: an
-- exercise of theirs, editable by their exercises.manage_org (name, movement definition, status), that
-- names its template. The copy has its own slug (slugs are unique platform-wide) but no assets of its
-- own: its videos are composed from the template's primitives (spec 4.12: `{exercise_slug}/` of the
-- template). One copy per template and organization; propagating again refreshes it.
alter table exercises add column template_exercise_id uuid references exercises (id) on delete set null;
alter table exercises add constraint exercises_template_owned check (template_exercise_id is null or organization_id is not null);
create unique index exercises_template_key on exercises (organization_id, template_exercise_id) where template_exercise_id is not null;
