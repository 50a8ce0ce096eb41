-- The clinic dashboard reads every live enrollment's sessions of a window in one pass (docs/telerehab.md, Performance):
-- the index of an enrollment's sessions by date now carries what the dashboard and progress count (status, form
-- score, completion time) and the patient its row policy reads, so that pass is an index-only scan. It replaces
-- plan_sessions_enrollment_idx (0083, the same key) and plan_sessions_scored_idx (0084, the scored sessions only).
-- Measured by bench/treatment-progress.ts.
create index plan_sessions_window_idx on plan_sessions (organization_id, enrollment_id, scheduled_on)
  include (status, form_score, completed_at, patient_id);
drop index plan_sessions_enrollment_idx;
drop index plan_sessions_scored_idx;
