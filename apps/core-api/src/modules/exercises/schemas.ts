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
  },
  { additionalProperties: false },
);

export const SetStatusBody = Type.Object({ status: Status }, { additionalProperties: false });
