import { DateRangeQuery, ListQueryWith, nullable, SortParam, Timestamp, Uuid } from '@clinic/http-kit';
import { Type } from 'typebox';
import { IncludeDeletedQuery } from '../../platform/deleted.ts';

/*
 * A treatment plan (docs/telerehab.md "Plans and versions"): phases (or weeks) of days, each day a list
 * of items. An item is an exercise with either sets of `{ side, reps }` (reps-based exercises; the composer's
 * limits, so that the video shows exactly what is prescribed) or a duration (duration-based ones), a rest,
 * an optional target range of motion, notes and the language of its video.
 */

export const PLAN_SORT = { name: 'lower(name)', created_at: 'created_at', updated_at: 'updated_at' } as const;
export const MAX_PLAN_DAYS = 366;

export type Joint = string;
const Language = (opts: { default?: string } = {}) =>
  Type.String({
    pattern: '^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$',
    maxLength: 35,
    description: 'Language of the video and its voice-over (listed in the exercise manifest), e.g. en or ro.',
    ...opts,
  });

export const PlanSet = Type.Object(
  {
    side: Type.Union([Type.Literal('left'), Type.Literal('right')]),
    reps: Type.Integer({ minimum: 5, maximum: 20, multipleOf: 5, description: 'A multiple of 5 from 5 to 20 (spec 4.12).' }),
  },
  { additionalProperties: false },
);

export const TargetRom = Type.Object(
  {
    joint: Type.String({
      pattern: '^(left|right)_(knee|hip|elbow|shoulder)$',
      description: 'A joint the exercise tracks: left_knee, right_hip, left_elbow, right_shoulder, ...',
    }),
    min_deg: Type.Number({ minimum: 0, maximum: 180 }),
    max_deg: Type.Number({ minimum: 0, maximum: 180 }),
  },
  { additionalProperties: false, description: 'The range of motion aimed at: the range of the joint angle, in degrees.' },
);

export const PlanItem = Type.Object(
  {
    exercise_id: Uuid,
    sets: Type.Optional(Type.Array(PlanSet, { minItems: 1, maxItems: 10, description: 'Reps-based exercises: the sets, in order.' })),
    duration_seconds: Type.Optional(Type.Integer({ minimum: 5, maximum: 3600, description: 'Duration-based exercises: how long.' })),
    rest_seconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 600, default: 60, description: 'Rest after each set (default 60).' })),
    target_rom: Type.Optional(nullable(TargetRom)),
    notes: Type.Optional(nullable(Type.String({ maxLength: 2000 }))),
    video_language: Type.Optional(Language({ default: 'en' })),
  },
  { additionalProperties: false },
);

export const PlanDay = Type.Object(
  {
    title: Type.Optional(nullable(Type.String({ maxLength: 200 }))),
    items: Type.Array(PlanItem, { minItems: 1, maxItems: 20 }),
  },
  { additionalProperties: false },
);

export const PlanPhase = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200, description: 'A phase or a week: "Week 1", "Strength".' }),
    days: Type.Array(PlanDay, { minItems: 1, maxItems: MAX_PLAN_DAYS }),
  },
  { additionalProperties: false },
);

export const SelfReport = Type.Object(
  {
    pain: Type.Boolean({ description: 'Completing a session asks for pain, 0-10.' }),
    effort: Type.Boolean({ description: 'Completing a session asks for perceived effort, 0-10.' }),
  },
  { additionalProperties: false },
);

const Phases = Type.Array(PlanPhase, {
  minItems: 1,
  maxItems: 52,
  description: `In order; plan day 1 is the first day of the first phase. At most ${MAX_PLAN_DAYS} days in all.`,
});
const RequiredConsents = Type.Array(Type.String({ pattern: '^treatment_specific_[a-z0-9_]+$', maxLength: 63 }), {
  maxItems: 10,
  uniqueItems: true,
  description: 'treatment_specific_* consent purposes the patient must have granted before a session starts.',
});

/** What a version snapshots (and a draft holds). */
const Content = {
  name: Type.String(),
  description: nullable(Type.String()),
  phases: Type.Array(PlanPhase),
  required_consents: Type.Array(Type.String()),
  self_report: SelfReport,
};

export const TreatmentPlan = Type.Object(
  {
    id: Uuid,
    organization_id: Uuid,
    kind: Type.Union([Type.Literal('library'), Type.Literal('patient')], {
      description: "library: the clinic's template; patient: one patient's plan.",
    }),
    patient_id: nullable(Uuid),
    ...Content,
    total_days: Type.Integer({ description: 'Plan days over all phases.' }),
    version: Type.Integer({ minimum: 0, description: 'The last published version (0: never published).' }),
    published: Type.Boolean({ description: 'false: a draft, which PATCH changes; true: no draft (rollback makes one).' }),
    published_at: nullable(Timestamp),
    draft_author_principal_id: nullable(Uuid, { description: 'Who last changed the content.' }),
    approved_by_principal_id: nullable(Uuid, { description: 'The second clinician who approved this content, if any.' }),
    approved_at: nullable(Timestamp),
    source_plan_id: nullable(Uuid),
    source_version: nullable(Type.Integer()),
    source_kind: nullable(Type.String({ description: 'duplicate, clone or promote' })),
    created_by_principal_id: Uuid,
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'TreatmentPlan' },
);

export const TreatmentPlanVersion = Type.Object(
  {
    version: Type.Integer({ minimum: 1 }),
    published_at: Timestamp,
    plan: Type.Object(Content),
  },
  { $id: 'TreatmentPlanVersion' },
);

const Name = Type.String({ minLength: 1, maxLength: 200 });
const Description = nullable(Type.String({ maxLength: 5000 }));

export const CreatePlanBody = Type.Object(
  {
    name: Name,
    description: Type.Optional(Description),
    patient_id: Type.Optional(Uuid),
    phases: Phases,
    required_consents: Type.Optional(RequiredConsents),
    self_report: Type.Optional(SelfReport),
  },
  { additionalProperties: false, description: "Without patient_id a library plan; with it, that patient's plan. Created as a draft." },
);

export const UpdatePlanBody = Type.Object(
  {
    name: Type.Optional(Name),
    description: Type.Optional(Description),
    phases: Type.Optional(Phases),
    required_consents: Type.Optional(RequiredConsents),
    self_report: Type.Optional(SelfReport),
  },
  { additionalProperties: false, description: 'Only what changes; only a draft changes (409 plan_not_draft otherwise).' },
);

export const DuplicateBody = Type.Object({ name: Type.Optional(Name) }, { additionalProperties: false });
export const CloneBody = Type.Object(
  {
    patient_id: Uuid,
    version: Type.Optional(Type.Integer({ minimum: 1, maximum: 2_147_483_647, description: 'Default: the latest published version.' })),
    name: Type.Optional(Name),
  },
  { additionalProperties: false },
);
export const PromoteBody = Type.Object(
  {
    version: Type.Optional(Type.Integer({ minimum: 1, maximum: 2_147_483_647, description: 'Default: the latest published version.' })),
    name: Type.Optional(Name),
  },
  { additionalProperties: false },
);

export const PlanListQuery = ListQueryWith({
  sort: SortParam(PLAN_SORT),
  kind: Type.Optional(Type.String({ description: 'library or patient' })),
  patient_id: Type.Optional(Type.String({ description: "A patient's plans." })),
  published: Type.Optional(Type.String({ description: 'true: plans without a draft; false: drafts.' })),
  q: Type.Optional(Type.String({ maxLength: 200, description: 'Case-insensitive substring of the name.' })),
  ...DateRangeQuery('created_at'),
  ...IncludeDeletedQuery,
});
export const PlanParams = Type.Object({ id: Uuid });

export const INTENDED_USE_VERSION = 'telerehab-intended-use/1';
export const INTENDED_USE =
  'The telerehabilitation module supports licensed clinicians who prescribe home exercise programmes. It shows ' +
  'patients the exercises their clinician prescribed, counts repetitions and estimates movement quality (form ' +
  'score) and range of motion from camera-based pose estimates, and summarises adherence and trends for the ' +
  'clinician. Its outputs are information for the clinician to review; they do not diagnose, do not choose or ' +
  'change treatment, and are not for emergencies or for unsupervised use in place of clinical judgement.';

export const TelerehabSettings = Type.Object({
  organization_id: Uuid,
  enabled: Type.Boolean({ description: 'Form scores, progress and analytics are served only when true.' }),
  require_plan_approval: Type.Boolean({ description: 'Publishing a plan needs a second clinician’s approval.' }),
  intended_use: Type.Object({
    version: Type.String(),
    text: Type.String(),
    accepted_version: nullable(Type.String()),
    accepted_at: nullable(Timestamp),
    accepted_by_principal_id: nullable(Uuid),
  }),
  updated_at: nullable(Timestamp),
});

export const UpdateSettingsBody = Type.Object(
  {
    enabled: Type.Optional(Type.Boolean()),
    require_plan_approval: Type.Optional(Type.Boolean()),
    accept_intended_use: Type.Optional(
      Type.Literal(true, { description: 'Accepts the current intended-use statement; needed to enable telerehab the first time.' }),
    ),
  },
  { additionalProperties: false },
);

// ---------------------------------------------------------------------------------------------
// Enrollments

export const ENROLLMENT_SORT = { created_at: 'created_at', start_date: 'start_date' } as const;
const LocalDate = (description = 'A local date, YYYY-MM-DD.') => Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', description });
const Reason = Type.String({ minLength: 1, maxLength: 500 });

export const Enrollment = Type.Object(
  {
    id: Uuid,
    organization_id: Uuid,
    treatment_plan_id: Uuid,
    plan_version: Type.Integer({ description: 'The published version followed (pinned).' }),
    plan_name: nullable(Type.String()),
    patient_id: Uuid,
    status: Type.String({ description: 'active, paused or cancelled' }),
    start_date: Type.String({ description: 'YYYY-MM-DD' }),
    weekdays: Type.Array(Type.Integer(), { description: 'ISO weekdays of the plan days (1 Monday .. 7 Sunday).' }),
    time_zone: Type.String(),
    status_changed_at: Timestamp,
    cancel_reason: nullable(Type.String()),
    cancelled_at: nullable(Timestamp),
    cancelled_by_principal_id: nullable(Uuid),
    enrolled_by_principal_id: Uuid,
    created_at: Timestamp,
    updated_at: Timestamp,
    schedule: Type.Object({
      today: Type.String({ description: "The local date in the enrollment's zone." }),
      total_days: nullable(Type.Integer(), {
        description: 'Plan days of the version (null when the version is not readable to the caller).',
      }),
      days_due: Type.Integer({ description: 'Plan days scheduled before today (at most total_days).' }),
      today_plan_day: nullable(Type.Integer(), { description: "Today's plan day; null when today is not a plan day." }),
      finished: Type.Boolean({ description: 'Every plan day is behind.' }),
    }),
  },
  { $id: 'Enrollment' },
);

const Pause = Type.Object({
  id: Uuid,
  paused_on: Type.String(),
  resumed_on: nullable(Type.String()),
  pause_reason: Type.String(),
  resume_reason: nullable(Type.String()),
  paused_by_principal_id: Uuid,
  resumed_by_principal_id: nullable(Uuid),
  paused_at: Timestamp,
  resumed_at: nullable(Timestamp),
});

export const EnrollmentDetail = Type.Object({
  ...Enrollment.properties,
  pauses: Type.Array(Pause),
  plan: nullable(Type.Object(Content), { description: 'The version followed: what the patient is prescribed.' }),
});

export const EnrollBody = Type.Object(
  {
    patient_id: Uuid,
    version: Type.Optional(Type.Integer({ minimum: 1, maximum: 2_147_483_647, description: 'Default: the latest published version.' })),
    start_date: Type.Optional(LocalDate('Default: today in the zone. At most a year before or after today.')),
    weekdays: Type.Optional(
      Type.Array(Type.Integer({ minimum: 1, maximum: 7 }), {
        minItems: 1,
        maxItems: 7,
        uniqueItems: true,
        description: 'ISO weekdays (1 Monday .. 7 Sunday) on which plan days fall; default every day.',
      }),
    ),
    time_zone: Type.Optional(Type.String({ maxLength: 64, description: "IANA zone of the patient's dates; default the organization's." })),
  },
  { additionalProperties: false },
);

export const EnrollmentListQuery = ListQueryWith({
  sort: SortParam(ENROLLMENT_SORT),
  patient_id: Type.Optional(Type.String()),
  treatment_plan_id: Type.Optional(Type.String()),
  status: Type.Optional(Type.String({ description: 'active, paused, cancelled, comma-separated.' })),
});

export const ReasonBody = Type.Object({ reason: Reason }, { additionalProperties: false });
export const ResumeBody = Type.Object({ reason: Type.Optional(Reason) }, { additionalProperties: false });
export const MigrateBody = Type.Object(
  { version: Type.Integer({ minimum: 1, maximum: 2_147_483_647, description: 'A published version of the same plan.' }) },
  { additionalProperties: false },
);

// ---------------------------------------------------------------------------------------------
// Plan sessions

export const SESSION_SORT = { scheduled_on: 'scheduled_on', created_at: 'created_at', completed_at: 'completed_at' } as const;

/** The software that serves a response (GET /v1/public/system-info): a report names the version behind a number. */
export const Labelling = Type.Object(
  {
    manufacturer_name: Type.String(),
    product_name: Type.String(),
    version: Type.String(),
    udi_di: Type.String(),
    intended_use_version: Type.String(),
  },
  {
    description:
      "The device labelling of the software serving this answer (GET /v1/public/system-info) and the intended-use statement's version.",
  },
);

const Results = Type.Object(
  {
    rep_count: nullable(Type.Integer()),
    form_score: nullable(Type.Integer({ description: '0-100; null without reps.' })),
    rom: nullable(
      Type.Record(Type.String(), Type.Unknown(), { description: 'Per tracked joint: min, max and range of the angle, degrees.' }),
    ),
    duration_s: nullable(Type.Number()),
    algorithm_version: Type.String({ description: 'The scoring algorithm that produced these numbers (docs/telemetry.md).' }),
    software_version: nullable(Type.String({ description: 'The software version that recorded them.' })),
    udi_di: nullable(Type.String()),
  },
  { description: 'What telemetry measured, stored when the session was completed.' },
);

export const PlanSession = Type.Object(
  {
    id: Uuid,
    organization_id: Uuid,
    enrollment_id: Uuid,
    patient_id: Uuid,
    treatment_plan_id: Uuid,
    plan_version: Type.Integer(),
    plan_day: Type.Integer(),
    scheduled_on: Type.String({ description: 'YYYY-MM-DD' }),
    item_index: Type.Integer(),
    exercise_id: Uuid,
    status: Type.String({ description: 'started, completed or skipped' }),
    exercise_session_id: nullable(Uuid),
    starts: Type.Integer(),
    render_id: nullable(Uuid),
    started_at: nullable(Timestamp),
    completed_at: nullable(Timestamp),
    skipped_at: nullable(Timestamp),
    skip_reason: nullable(Type.String()),
    pain: nullable(Type.Integer()),
    effort: nullable(Type.Integer()),
    patient_note: nullable(Type.String()),
    results: nullable(Results),
    results_withheld: Type.Boolean({
      description: 'true: there are results, but the organization has not enabled telerehab, so they are not served.',
    }),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'PlanSession' },
);

const Video = Type.Object({
  render_id: Uuid,
  status: Type.String({ description: 'processing or ready (docs/composer.md)' }),
  language: Type.String(),
  stream_video_id: nullable(Type.String()),
  playback_hls_url: nullable(Type.String()),
  duration_seconds: nullable(Type.Number()),
  cached: Type.Boolean(),
});

const ItemSchema = Type.Object({
  exercise_id: Uuid,
  sets: Type.Optional(Type.Array(PlanSet)),
  duration_seconds: Type.Optional(Type.Integer()),
  rest_seconds: Type.Integer(),
  target_rom: nullable(TargetRom),
  notes: nullable(Type.String()),
  video_language: Type.String(),
});

export const StartedSession = Type.Object({
  session: PlanSession,
  item: ItemSchema,
  exercise: Type.Object({ id: Uuid, slug: Type.String(), name: Type.String(), kind: Type.String() }),
  telemetry: nullable(
    Type.Object({
      session_id: Uuid,
      session_token: Type.String({
        description: 'Authenticates POST /v1/pose/frames and POST /v1/sessions/{id}/end at the telemetry service.',
      }),
      session_token_expires_at: Timestamp,
    }),
    { description: 'null for items telemetry does not score (duration-based exercises).' },
  ),
  video: nullable(Video, { description: 'The composed video of the item (its sets, a stable seed); null when none could be had.' }),
  video_unavailable_reason: nullable(Type.String()),
  labelling: Labelling,
});

export const StartBody = Type.Object(
  { item_index: Type.Integer({ minimum: 0, maximum: 19, description: "Which item of today's plan day (0-based)." }) },
  { additionalProperties: false },
);
export const SkipBody = Type.Object(
  { item_index: Type.Integer({ minimum: 0, maximum: 19 }), reason: Type.String({ minLength: 1, maxLength: 500 }) },
  { additionalProperties: false },
);
export const CompleteBody = Type.Object(
  {
    pain: Type.Optional(Type.Integer({ minimum: 0, maximum: 10, description: 'Required when the plan asks for pain (0-10).' })),
    effort: Type.Optional(Type.Integer({ minimum: 0, maximum: 10, description: 'Required when the plan asks for effort (0-10).' })),
    note: Type.Optional(Type.String({ maxLength: 2000 })),
  },
  { additionalProperties: false },
);

export const SessionListQuery = ListQueryWith({
  sort: SortParam(SESSION_SORT),
  enrollment_id: Type.Optional(Type.String()),
  patient_id: Type.Optional(Type.String()),
  status: Type.Optional(Type.String({ description: 'started, completed, skipped, comma-separated.' })),
  ...DateRangeQuery('scheduled_on'),
});

export const TodayQuery = Type.Object({
  patient_id: Type.Optional(Type.String({ description: 'Staff: whose day (a patient record). A patient reads its own.' })),
});

const TodayItem = Type.Object({
  item_index: Type.Integer(),
  item: ItemSchema,
  exercise: nullable(Type.Object({ id: Uuid, slug: Type.String(), name: Type.String(), kind: Type.String() })),
  status: Type.String({ description: 'pending, started, completed or skipped' }),
  plan_session_id: nullable(Uuid),
});

export const TodayPlan = Type.Object({
  enrollments: Type.Array(
    Type.Object({
      enrollment: Enrollment,
      plan_day: nullable(Type.Integer(), {
        description: "Today's plan day; null: none today (not a weekday of the plan, paused, before the start or after the end).",
      }),
      phase: nullable(Type.String()),
      title: nullable(Type.String()),
      items: Type.Array(TodayItem),
      self_report: SelfReport,
      missing_consents: Type.Array(Type.String(), {
        description: "Purposes the patient must grant before starting (the plan's, and biometric for scored items).",
      }),
    }),
  ),
});

// ---------------------------------------------------------------------------------------------
// Progress and analytics (docs/telerehab.md "Progress and analytics definitions")

export const DASHBOARD_SORT = { adherence: 'adherence', form_trend: 'form_trend', last_completed_at: 'last_completed_at' } as const;

const Point = Type.Object({
  date: Type.String(),
  plan_session_id: Uuid,
  rep_count: nullable(Type.Integer()),
  form_score: nullable(Type.Integer()),
  rom: nullable(Type.Record(Type.String(), nullable(Type.Number())), { description: 'Range of each tracked joint, degrees.' }),
  algorithm_version: nullable(Type.String()),
});

export const Progress = Type.Object({
  enrollment: Enrollment,
  adherence: Type.Object({
    days_due: Type.Integer({ description: 'Scheduled plan days before today, and today once all its items are done.' }),
    days_completed: Type.Integer({ description: 'Of those, days whose items were all completed on that date.' }),
    day_rate: nullable(Type.Number({ description: 'days_completed / days_due.' })),
    items_due: Type.Integer(),
    items_completed: Type.Integer(),
    items_skipped: Type.Integer(),
    item_rate: nullable(Type.Number()),
  }),
  exercises: Type.Array(
    Type.Object({
      exercise_id: Uuid,
      name: nullable(Type.String()),
      sessions: Type.Integer(),
      total_reps: Type.Integer(),
      form_score_mean: nullable(Type.Number()),
      form_score_trend: nullable(Type.Number({ description: 'Least-squares slope, points per day.' })),
      rom_trend: Type.Record(
        Type.String(),
        Type.Object({
          first_deg: nullable(Type.Number()),
          last_deg: nullable(Type.Number()),
          trend_deg_per_day: nullable(Type.Number()),
        }),
        { description: 'Per tracked joint: the range of motion of the first and last session and its least-squares slope.' },
      ),
      series: Type.Array(Point),
    }),
  ),
  self_reports: Type.Object({
    pain: Type.Array(Type.Object({ date: Type.String(), value: Type.Integer() })),
    effort: Type.Array(Type.Object({ date: Type.String(), value: Type.Integer() })),
  }),
  algorithm_versions: Type.Array(Type.String(), { description: 'The scoring algorithms behind these numbers.' }),
  labelling: Labelling,
});

export const DashboardQuery = ListQueryWith({
  sort: SortParam(DASHBOARD_SORT),
  window_days: Type.Optional(Type.String({ description: 'The window before today, 7 to 90 days (default 14).' })),
  treatment_plan_id: Type.Optional(Type.String()),
  falling_behind: Type.Optional(Type.String({ description: 'true or false' })),
  worsening_form: Type.Optional(Type.String({ description: 'true or false' })),
});

export const DashboardEntry = Type.Object({
  enrollment_id: Uuid,
  patient_id: Uuid,
  treatment_plan_id: Uuid,
  plan_version: Type.Integer(),
  plan_name: nullable(Type.String()),
  status: Type.String(),
  days_due: Type.Integer(),
  days_completed: Type.Integer(),
  items_due: Type.Integer(),
  items_completed: Type.Integer(),
  adherence: nullable(Type.Number()),
  scored_sessions: Type.Integer(),
  form_mean: nullable(Type.Number()),
  form_trend: nullable(Type.Number({ description: 'Points per day (least squares) over the window.' })),
  last_completed_at: nullable(Timestamp),
  falling_behind: Type.Boolean(),
  worsening_form: Type.Boolean(),
});

export const Dashboard = Type.Object({
  data: Type.Array(DashboardEntry),
  pagination: Type.Object({ page: Type.Integer(), limit: Type.Integer(), total: Type.Integer() }),
  summary: Type.Object({
    window_days: Type.Integer(),
    enrollments: Type.Integer({ description: 'Live (active or paused) enrollments, whatever the flag filters.' }),
    falling_behind: Type.Integer(),
    worsening_form: Type.Integer(),
    thresholds: Type.Object({ behind_below: Type.Number(), worsening_points: Type.Number(), worsening_min_sessions: Type.Integer() }),
  }),
  labelling: Labelling,
});
