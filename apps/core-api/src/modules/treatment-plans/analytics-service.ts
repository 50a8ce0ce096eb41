import type { Queryable } from '@clinic/db';
import { errors, parsePagination, parseSort, isUuid } from '@clinic/http-kit';
import type { Config } from '../../config.ts';
import * as aq from './analytics-queries.ts';
import * as eq from './enrollment-queries.ts';
import { enrollmentView } from './enrollment-service.ts';
import { requireTelerehab } from './service.ts';
import { DASHBOARD_SORT } from './schemas.ts';
import { labellingOf } from './session-service.ts';

const dayNumber = (d: string) => Date.parse(`${d}T00:00:00Z`) / 86_400_000;

/** Least-squares slope of y over x (per day); null with fewer than two points or no spread of x. */
export function slope(points: { x: number; y: number }[]): number | null {
  if (points.length < 2) return null;
  const n = points.length;
  const mx = points.reduce((s, p) => s + p.x, 0) / n;
  const my = points.reduce((s, p) => s + p.y, 0) / n;
  let sxx = 0;
  let sxy = 0;
  for (const p of points) {
    sxx += (p.x - mx) ** 2;
    sxy += (p.x - mx) * (p.y - my);
  }
  return sxx === 0 ? null : Math.round((sxy / sxx) * 1000) / 1000;
}

const round = (v: number | null, digits = 3) => (v === null ? null : Math.round(v * 10 ** digits) / 10 ** digits);

/**
 * GET /v1/treatment-plans/enrollments/{id}/progress (docs/telerehab.md "Analytics definitions"): adherence
 * (due plan days and items, and how many were done on their date), per exercise the reps, form scores and ranges
 * of motion over time with their trends, the self-reports, and the algorithm versions behind the numbers.
 * Decision-support output: only where telerehab is enabled (403 telerehab_disabled).
 */
export async function progress(tx: Queryable, orgId: string, enrollmentId: string, info: Config['systemInfo']) {
  // One round trip: the statements leave together (pipelined) and are read in order. What the boundary or an
  // invisible enrollment refuses is thrown before anything else is looked at; the other answers are dropped.
  const pending = [
    requireTelerehab(tx, orgId),
    eq.findEnrollment(tx, orgId, enrollmentId),
    aq.adherence(tx, orgId, enrollmentId),
    aq.completedSessions(tx, orgId, enrollmentId),
    aq.sessionExerciseNames(tx, orgId, enrollmentId),
  ] as const;
  for (const p of pending) p.catch(() => undefined);
  const [telerehab, found, counted, completed, named] = pending;
  await telerehab;
  const e = await found;
  if (!e) throw errors.notFound('No enrollment with this id is visible to you.');
  const a = await counted;
  const points = await completed;
  const names = await named;

  const byExercise = new Map<string, aq.SessionPoint[]>();
  for (const p of points) {
    const list = byExercise.get(p.exercise_id);
    if (list) list.push(p);
    else byExercise.set(p.exercise_id, [p]);
  }
  const exercises = [...byExercise.entries()].map(([exerciseId, list]) => {
    const scored = list.filter((p) => p.form_score !== null);
    const joints = new Set(list.flatMap((p) => Object.keys(p.rom ?? {})));
    const romTrend: Record<string, { first_deg: number | null; last_deg: number | null; trend_deg_per_day: number | null }> = {};
    for (const j of joints) {
      const ranged = list.flatMap((p) => {
        const r = p.rom?.[j]?.range_deg;
        return typeof r === 'number' ? [{ x: dayNumber(p.scheduled_on), y: r }] : [];
      });
      romTrend[j] = { first_deg: ranged[0]?.y ?? null, last_deg: ranged.at(-1)?.y ?? null, trend_deg_per_day: slope(ranged) };
    }
    return {
      exercise_id: exerciseId,
      name: names.get(exerciseId) ?? null,
      sessions: list.length,
      total_reps: list.reduce((s, p) => s + (p.rep_count ?? 0), 0),
      form_score_mean: scored.length ? round(scored.reduce((s, p) => s + p.form_score!, 0) / scored.length, 1) : null,
      form_score_trend: slope(scored.map((p) => ({ x: dayNumber(p.scheduled_on), y: p.form_score! }))),
      rom_trend: romTrend,
      series: list.map((p) => ({
        date: p.scheduled_on,
        plan_session_id: p.id,
        rep_count: p.rep_count,
        form_score: p.form_score,
        rom: p.rom ? Object.fromEntries(Object.entries(p.rom).map(([j, r]) => [j, r?.range_deg ?? null])) : null,
        algorithm_version: p.algorithm_version,
      })),
    };
  });
  const reports = (key: 'pain' | 'effort') => points.flatMap((p) => (p[key] === null ? [] : [{ date: p.scheduled_on, value: p[key]! }]));
  return {
    enrollment: enrollmentView(e),
    adherence: {
      days_due: a.days_due,
      days_completed: a.days_completed,
      day_rate: a.days_due ? round(a.days_completed / a.days_due) : null,
      items_due: a.items_due,
      items_completed: a.items_completed,
      items_skipped: a.items_skipped,
      item_rate: a.items_due ? round(a.items_completed / a.items_due) : null,
    },
    exercises,
    self_reports: { pain: reports('pain'), effort: reports('effort') },
    algorithm_versions: [...new Set(points.flatMap((p) => (p.algorithm_version ? [p.algorithm_version] : [])))].sort(),
    labelling: labellingOf(info),
  };
}

const flag = (v: unknown, key: string, fields: Record<string, string>) => {
  if (v === undefined || v === '') return undefined;
  if (v === 'true') return true;
  if (v === 'false') return false;
  fields[key] = 'true or false';
  return undefined;
};

/**
 * GET /v1/treatment-plans/analytics (telemetry.view_org): the clinic dashboard over its live enrollments, worst
 * adherence first: who is falling behind, whose form is worsening (docs/telerehab.md). Only where telerehab is enabled.
 */
export async function dashboard(tx: Queryable, orgId: string, query: Record<string, unknown>, info: Config['systemInfo']) {
  const page = parsePagination(query);
  const sort = parseSort(query.sort, DASHBOARD_SORT, 'adherence');
  const fields: Record<string, string> = {};
  let windowDays = 14;
  if (query.window_days !== undefined && query.window_days !== '') {
    const n = Number(query.window_days);
    if (!Number.isInteger(n) || n < 7 || n > 90) fields.window_days = 'an integer from 7 to 90';
    else windowDays = n;
  }
  let planId: string | undefined;
  if (query.treatment_plan_id !== undefined && query.treatment_plan_id !== '') {
    if (!isUuid(query.treatment_plan_id)) fields.treatment_plan_id = 'must be a uuid';
    else planId = query.treatment_plan_id.toLowerCase();
  }
  const fallingBehind = flag(query.falling_behind, 'falling_behind', fields);
  const worseningForm = flag(query.worsening_form, 'worsening_form', fields);
  if (Object.keys(fields).length) throw errors.queryValidation(fields);
  await requireTelerehab(tx, orgId);
  const r = await aq.dashboard(tx, orgId, { windowDays, planId, fallingBehind, worseningForm }, sort.sql, page);
  return {
    data: r.rows.map((x) => ({
      ...x,
      adherence: round(x.adherence),
      form_mean: round(x.form_mean, 1),
      form_trend: round(x.form_trend),
    })),
    pagination: { page: page.page, limit: page.limit, total: r.total },
    summary: {
      window_days: windowDays,
      enrollments: r.enrollments,
      falling_behind: r.behind,
      worsening_form: r.worsening,
      thresholds: {
        behind_below: aq.BEHIND_BELOW,
        worsening_points: aq.WORSENING_POINTS,
        worsening_min_sessions: aq.WORSENING_MIN_SESSIONS,
      },
    },
    labelling: labellingOf(info),
  };
}
