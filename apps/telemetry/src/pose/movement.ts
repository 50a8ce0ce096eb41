import { Type, type Static } from 'typebox';
// Spelled out (not mapped from JOINTS) so that the static type keeps the literals.
const Joint = Type.Union([
  Type.Literal('left_knee'),
  Type.Literal('right_knee'),
  Type.Literal('left_hip'),
  Type.Literal('right_hip'),
  Type.Literal('left_elbow'),
  Type.Literal('right_elbow'),
  Type.Literal('left_shoulder'),
  Type.Literal('right_shoulder'),
]);

/**
 * The movement definition of an exercise (docs/telemetry.md): the joint angles to track (ROM is
 * reported for each), the joints whose mean angle drives rep detection, the resting and target angles
 * of a full rep (either order: flexion or extension) and the expected duration of one rep.
 */
export const MovementDefinition = Type.Object(
  {
    tracked_joints: Type.Array(Joint, { minItems: 1, maxItems: 8, uniqueItems: true }),
    primary_joints: Type.Array(Joint, { minItems: 1, maxItems: 2, uniqueItems: true, description: 'Must be among tracked_joints.' }),
    rest_angle: Type.Number({ minimum: 0, maximum: 180 }),
    target_angle: Type.Number({ minimum: 0, maximum: 180, description: 'At least 20 degrees from rest_angle.' }),
    tempo_s: Type.Object(
      { min: Type.Number({ exclusiveMinimum: 0, maximum: 60 }), max: Type.Number({ exclusiveMinimum: 0, maximum: 60 }) },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false, $id: 'MovementDefinition' },
);
export type Movement = Static<typeof MovementDefinition>;

/** Rules a schema cannot say; returns field -> reason, empty when the definition is usable. */
export function movementProblems(m: Movement): Record<string, string> {
  const out: Record<string, string> = {};
  if (m.primary_joints.some((j) => !m.tracked_joints.includes(j))) out['movement.primary_joints'] = 'every primary joint must be tracked';
  if (Math.abs(m.rest_angle - m.target_angle) < 20) out['movement.target_angle'] = 'must differ from rest_angle by at least 20 degrees';
  if (m.tempo_s.min > m.tempo_s.max) out['movement.tempo_s'] = 'min must not exceed max';
  return out;
}
