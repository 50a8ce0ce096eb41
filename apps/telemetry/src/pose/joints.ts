/**
 * Joint angles from MediaPipe Pose landmark indices: the angle at the middle landmark, in degrees,
 * between the segments to the other two. 180 is a straight limb.
 */
export const JOINTS = {
  left_knee: [23, 25, 27],
  right_knee: [24, 26, 28],
  left_hip: [11, 23, 25],
  right_hip: [12, 24, 26],
  left_elbow: [11, 13, 15],
  right_elbow: [12, 14, 16],
  left_shoulder: [23, 11, 13],
  right_shoulder: [24, 12, 14],
} as const satisfies Record<string, readonly [number, number, number]>;

export type JointName = keyof typeof JOINTS;
export const JOINT_NAMES = Object.keys(JOINTS) as JointName[];

/** A landmark below this visibility is not trusted: an angle that needs it is not measured. */
export const VISIBILITY_MIN = 0.5;

const STRIDE = 33 * 4;

/** The angle of `joint` in frame `f` of a batch's data, or NaN when a landmark is not visible enough. */
export function jointAngle(data: Float32Array, f: number, joint: JointName): number {
  const [a, b, c] = JOINTS[joint];
  const base = f * STRIDE;
  const ia = base + a * 4;
  const ib = base + b * 4;
  const ic = base + c * 4;
  if (data[ia + 3]! < VISIBILITY_MIN || data[ib + 3]! < VISIBILITY_MIN || data[ic + 3]! < VISIBILITY_MIN) return NaN;
  const ux = data[ia]! - data[ib]!;
  const uy = data[ia + 1]! - data[ib + 1]!;
  const uz = data[ia + 2]! - data[ib + 2]!;
  const vx = data[ic]! - data[ib]!;
  const vy = data[ic + 1]! - data[ib + 1]!;
  const vz = data[ic + 2]! - data[ib + 2]!;
  const nu = Math.hypot(ux, uy, uz);
  const nv = Math.hypot(vx, vy, vz);
  // Landmarks on top of each other: no direction, no angle.
  if (nu < 1e-6 || nv < 1e-6) return NaN;
  const cos = Math.max(-1, Math.min(1, (ux * vx + uy * vy + uz * vz) / (nu * nv)));
  return (Math.acos(cos) * 180) / Math.PI;
}
