import { Timestamp, Uuid } from '@clinic/http-kit';
import { MovementDefinition } from '@clinic/telemetry';
import { Type } from 'typebox';

export const EXERCISE_STATUSES = ['draft', 'published', 'archived'] as const;
const Status = Type.Union([Type.Literal('draft'), Type.Literal('published'), Type.Literal('archived')]);
export const EXERCISE_SORT = { name: 'lower(name)', created_at: 'created_at', slug: 'slug' } as const;

export const Exercise = Type.Object(
  {
    id: Uuid,
    organization_id: Type.Union([Uuid, Type.Null()], { description: 'null: the platform library.' }),
    slug: Type.String(),
    name: Type.String(),
    kind: Type.Union([Type.Literal('reps_based'), Type.Literal('duration_based')]),
    status: Status,
    asset_version: Type.Integer(),
    catalog_render_id: Type.Union([Uuid, Type.Null()]),
    template_exercise_id: Type.Union([Uuid, Type.Null()], {
      description:
        "An organization's copy of a platform exercise names it (POST /v1/exercises/{id}/propagate); its videos are the template's.",
    }),
    movement: Type.Union([MovementDefinition, Type.Null()], { description: 'What telemetry scores against; null: not scorable.' }),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'Exercise' },
);

export const CreateExerciseBody = Type.Object(
  {
    slug: Type.String({
      pattern: '^[a-z0-9]+(-[a-z0-9]+)*$',
      maxLength: 100,
      description: 'Unique platform-wide; names the asset folder.',
    }),
    name: Type.String({ minLength: 1, maxLength: 200 }),
    kind: Type.Union([Type.Literal('reps_based'), Type.Literal('duration_based')]),
    movement: Type.Optional(MovementDefinition),
    platform: Type.Optional(
      Type.Boolean({ description: 'true: add it to the platform library (superadmins only; no organization). Default false.' }),
    ),
  },
  { additionalProperties: false },
);

export const UpdateExerciseBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    movement: Type.Optional(MovementDefinition),
  },
  { additionalProperties: false, description: 'Only what changes. The slug (the asset folder) and the kind stay.' },
);

export const PropagateBody = Type.Object(
  {
    organization_ids: Type.Optional(
      Type.Array(Uuid, { minItems: 1, maxItems: 500, description: 'The organizations to reach; every organization when left out.' }),
    ),
  },
  { additionalProperties: false },
);

const Reached = Type.Array(Type.Object({ organization_id: Uuid, exercise_id: Uuid }));
export const Propagation = Type.Object({
  template_exercise_id: Uuid,
  created: Reached,
  updated: Reached,
});

export const SetStatusBody = Type.Object({ status: Status }, { additionalProperties: false });
