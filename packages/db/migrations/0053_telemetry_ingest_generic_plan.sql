-- Pose ingest: the checks of app.telemetry_ingest_pose (0052) are equality probes on unique or
-- leading index columns, so one generic plan serves every call. Left to the default, PL/pgSQL's plan
-- cache may keep building a custom plan per call (it compares costs after five), which measured about
-- 0.05 of the bench ratio on PGlite.
alter function app.telemetry_ingest_pose(uuid, uuid, uuid, int, int, bigint, bigint, bytea) set plan_cache_mode = force_generic_plan;
