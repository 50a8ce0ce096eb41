-- The platform library's movement definitions for the three exercises the scoring is validated on
-- (docs/telemetry.md, accuracy table): squat, arm raise, lunge. Published platform exercises, so any
-- patient can start a session on them. An exercise of the same slug seeded elsewhere keeps its row and
-- gets the definition.
insert into exercises (organization_id, slug, name, kind, status) values
  (null, 'squat', 'Squat', 'reps_based', 'published'),
  (null, 'arm-raise', 'Arm raise', 'reps_based', 'published'),
  (null, 'lunge', 'Lunge', 'reps_based', 'published')
on conflict (slug) do nothing;

insert into exercise_movements (exercise_id, organization_id, definition)
select e.id, null, d.definition::jsonb
from (values
  ('squat', '{"tracked_joints":["left_knee","right_knee","left_hip","right_hip"],"primary_joints":["left_knee","right_knee"],"rest_angle":170,"target_angle":90,"tempo_s":{"min":1.5,"max":5}}'),
  ('arm-raise', '{"tracked_joints":["left_shoulder","right_shoulder","left_elbow","right_elbow"],"primary_joints":["left_shoulder","right_shoulder"],"rest_angle":15,"target_angle":165,"tempo_s":{"min":1.5,"max":5}}'),
  ('lunge', '{"tracked_joints":["left_knee","right_knee","left_hip","right_hip"],"primary_joints":["left_knee","right_knee"],"rest_angle":170,"target_angle":95,"tempo_s":{"min":1.5,"max":6}}')
) as d (slug, definition)
join exercises e on e.slug = d.slug and e.organization_id is null
on conflict (exercise_id) do nothing;
