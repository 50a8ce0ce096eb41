-- A sign-in subject that leaves its account (erasure clears users.external_subject; an account can
-- also be deleted) moves the global epoch, so every instance drops every cached request context on
-- its next request. The cache also checks that an entry names the user the subject belongs to now;
-- the epoch makes the rule hold for anything else cached about that person.
create trigger users_subject_context_epoch after update of external_subject on users
  for each row when (old.external_subject is distinct from new.external_subject)
  execute function app.bump_context_epoch();
create trigger users_delete_context_epoch after delete on users
  for each statement execute function app.bump_context_epoch();
