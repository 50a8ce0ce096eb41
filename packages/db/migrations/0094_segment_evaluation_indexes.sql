-- Segment evaluation at scale (bench/segment-evaluate.ts: three conditions over 100,000
-- patients with 500,000 appointments). A background evaluation goes through the organization's live patients
-- in steps of SEGMENTS_CHUNK by id, under the caller's row policies, and tests the criteria for each one.
--
-- 1. The step's page (the next live patients by id): the patients row policies read user_id, id,
--    organization_id and deleted_at, so with these in the index the page is an index-only scan instead of a
--    heap read of every patient of the step.
create index patients_org_live_id_idx on patients (organization_id, id) include (user_id, deleted_at) where deleted_at is null;

-- 2. "Had an appointment (of these services, with these statuses, in the last n days)": one probe per patient
--    of the step into a patient's appointments by time. With service, status and specialist (the appointments
--    row policy) in the index the probe no longer reads the heap: about 4x faster per patient measured. It
--    replaces the index of the same key without them (every query that used that one can use this one).
create index appointments_org_patient_cover_idx on appointments (organization_id, patient_id, starts_at)
  include (service_id, status, specialist_id) where patient_id is not null;
drop index appointments_org_patient_idx;
