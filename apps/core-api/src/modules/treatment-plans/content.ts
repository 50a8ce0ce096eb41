import type { Queryable } from '@clinic/db';
import { errors } from '@clinic/http-kit';
import { exerciseFacts, type PlanContent, type PlanItem, type PlanPhase, usablePurposes } from './queries.ts';
import { type Joint, MAX_PLAN_DAYS } from './schemas.ts';

/** An item as a request gives it (defaults may be missing); the schema has already checked shapes and ranges. */
export interface ItemInput {
  exercise_id: string;
  sets?: { side: 'left' | 'right'; reps: number }[] | undefined;
  duration_seconds?: number | undefined;
  rest_seconds?: number | undefined;
  target_rom?: { joint: Joint; min_deg: number; max_deg: number } | null | undefined;
  notes?: string | null | undefined;
  video_language?: string | undefined;
}
export interface PhaseInput {
  name: string;
  days: { title?: string | null | undefined; items: ItemInput[] }[];
}

/** What a request may give for the content. */
export interface ContentInput {
  name: string;
  description?: string | null | undefined;
  phases: PhaseInput[];
  required_consents?: string[] | undefined;
  self_report?: { pain: boolean; effort: boolean } | undefined;
}

export const totalDays = (phases: PlanPhase[]): number => phases.reduce((n, p) => n + p.days.length, 0);

/** Plan day n (1-based) over the phases in order, or null beyond the plan. */
export function dayOf(phases: PlanPhase[], n: number): { phase: string; title: string | null; items: PlanItem[] } | null {
  let left = n;
  for (const p of phases) {
    if (left <= p.days.length) {
      const d = p.days[left - 1]!;
      return { phase: p.name, title: d.title, items: d.items };
    }
    left -= p.days.length;
  }
  return null;
}

function item(i: ItemInput): PlanItem {
  return {
    exercise_id: i.exercise_id.toLowerCase(),
    ...(i.sets ? { sets: i.sets.map((s) => ({ side: s.side, reps: s.reps })) } : {}),
    ...(i.duration_seconds !== undefined ? { duration_seconds: i.duration_seconds } : {}),
    rest_seconds: i.rest_seconds ?? 60,
    target_rom: i.target_rom ?? null,
    notes: i.notes?.trim() || null,
    video_language: i.video_language ?? 'en',
  };
}

/**
 * The content as stored: texts trimmed, defaults filled, then checked against what it names: every exercise
 * visible to the organization and published, sets for reps-based ones and a duration for duration-based
 * ones, a target range of motion on a joint the exercise tracks, consent purposes the organization's plans
 * may require. Every problem is named in one 400 validation_error.
 */
export async function checkContent(tx: Queryable, orgId: string, c: ContentInput): Promise<PlanContent> {
  const fields: Record<string, string> = {};
  const name = c.name.trim();
  if (!name) fields.name = 'must not be blank';
  const phases: PlanPhase[] = c.phases.map((p) => ({
    name: p.name.trim(),
    days: p.days.map((d) => ({ title: d.title?.trim() || null, items: d.items.map(item) })),
  }));
  phases.forEach((p, i) => {
    if (!p.name) fields[`phases.${i}.name`] = 'must not be blank';
  });
  if (totalDays(phases) > MAX_PLAN_DAYS) fields.phases = `at most ${MAX_PLAN_DAYS} plan days in all`;
  const ids = [...new Set(phases.flatMap((p) => p.days.flatMap((d) => d.items.map((it) => it.exercise_id))))];
  const facts = new Map((await exerciseFacts(tx, orgId, ids)).map((e) => [e.id, e]));
  for (const [pi, p] of phases.entries()) {
    for (const [di, d] of p.days.entries()) {
      for (const [ii, it] of d.items.entries()) {
        const at = `phases.${pi}.days.${di}.items.${ii}`;
        const e = facts.get(it.exercise_id);
        if (!e) {
          fields[`${at}.exercise_id`] = 'no exercise with this id is visible to the organization';
          continue;
        }
        if (e.status !== 'published') {
          fields[`${at}.exercise_id`] = `the exercise is ${e.status}; plans use published exercises`;
          continue;
        }
        if (e.kind === 'reps_based' && (!it.sets || it.duration_seconds !== undefined))
          fields[at] = 'a reps-based exercise takes sets (and no duration_seconds)';
        if (e.kind === 'duration_based' && (it.sets || it.duration_seconds === undefined))
          fields[at] = 'a duration-based exercise takes duration_seconds (and no sets)';
        if (it.target_rom) {
          if (it.target_rom.min_deg > it.target_rom.max_deg) fields[`${at}.target_rom`] = 'min_deg must not exceed max_deg';
          else if (!e.tracked_joints?.includes(it.target_rom.joint))
            fields[`${at}.target_rom.joint`] = 'the exercise does not track this joint';
        }
      }
    }
  }
  const required = [...new Set(c.required_consents ?? [])].sort();
  const usable = new Set(await usablePurposes(tx, orgId, required));
  const unknown = required.filter((code) => !usable.has(code));
  if (unknown.length) fields.required_consents = `not consent purposes of this organization: ${unknown.join(', ')}`;
  if (Object.keys(fields).length) throw errors.validation(fields, 'The plan is invalid; see fields.');
  return {
    name,
    description: c.description?.trim() || null,
    phases,
    required_consents: required,
    self_report: { pain: c.self_report?.pain ?? false, effort: c.self_report?.effort ?? false },
  };
}
