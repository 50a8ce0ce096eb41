import type { Movement } from '../pose/movement.ts';
import type { ExerciseKind } from './generator.ts';

/** The platform library's definitions, as seeded by migration 0051 (a test keeps the two in step). */
export const PLATFORM_MOVEMENTS: Record<ExerciseKind, Movement> = {
  squat: {
    tracked_joints: ['left_knee', 'right_knee', 'left_hip', 'right_hip'],
    primary_joints: ['left_knee', 'right_knee'],
    rest_angle: 170,
    target_angle: 90,
    tempo_s: { min: 1.5, max: 5 },
  },
  'arm-raise': {
    tracked_joints: ['left_shoulder', 'right_shoulder', 'left_elbow', 'right_elbow'],
    primary_joints: ['left_shoulder', 'right_shoulder'],
    rest_angle: 15,
    target_angle: 165,
    tempo_s: { min: 1.5, max: 5 },
  },
  lunge: {
    tracked_joints: ['left_knee', 'right_knee', 'left_hip', 'right_hip'],
    primary_joints: ['left_knee', 'right_knee'],
    rest_angle: 170,
    target_angle: 95,
    tempo_s: { min: 1.5, max: 6 },
  },
};
