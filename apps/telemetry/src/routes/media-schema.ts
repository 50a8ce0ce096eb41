import { Uuid } from '@clinic/http-kit';
import { Type, type TSchema } from 'typebox';

/*
 * Media engagement events (spec 4.11; payloads designed in docs/telemetry.md). Every event has `seq`
 * (per media session, from 0; a retried event with a seen seq is ignored), `kind` and `at` (client time).
 */
const common = {
  seq: Type.Integer({ minimum: 0, maximum: 1_000_000 }),
  at: Type.String({ format: 'date-time' }),
};
const position = Type.Number({ minimum: 0, maximum: 86_400, description: 'Playback position, seconds.' });
const event = <P extends Record<string, TSchema>>(kind: string, props: P) =>
  Type.Object({ ...common, kind: Type.Literal(kind), ...props }, { additionalProperties: false });

export const MediaEvent = Type.Union([
  event('session_start', {
    load_time_ms: Type.Integer({ minimum: 0, maximum: 600_000, description: 'From play request to first frame.' }),
    connection: Type.Object(
      {
        effective_type: Type.Union(['slow-2g', '2g', '3g', '4g', '5g', 'wifi', 'ethernet', 'unknown'].map((v) => Type.Literal(v))),
        downlink_mbps: Type.Optional(Type.Number({ minimum: 0, maximum: 100_000 })),
        rtt_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: 60_000 })),
      },
      { additionalProperties: false },
    ),
  }),
  event('heartbeat', {
    position_s: position,
    buffering: Type.Boolean(),
    bitrate_kbps: Type.Integer({ minimum: 0, maximum: 1_000_000 }),
    quality: Type.String({ minLength: 1, maxLength: 20, description: 'Rendition label, such as 720p.' }),
    dropped_frames: Type.Integer({ minimum: 0, maximum: 100_000, description: 'Frames dropped since the previous heartbeat.' }),
  }),
  event('buffering_start', { position_s: position }),
  event('buffering_end', { position_s: position, duration_ms: Type.Integer({ minimum: 0, maximum: 3_600_000 }) }),
  event('quality_change', {
    position_s: position,
    from: Type.String({ minLength: 1, maxLength: 20 }),
    to: Type.String({ minLength: 1, maxLength: 20 }),
    reason: Type.Union([Type.Literal('auto'), Type.Literal('manual')]),
  }),
  event('milestone', { percent: Type.Union([25, 50, 75, 95].map((p) => Type.Literal(p))) }),
  event('session_end', {
    position_s: position,
    watched_percent: Type.Number({ minimum: 0, maximum: 100 }),
    completion_status: Type.Union([Type.Literal('completed'), Type.Literal('abandoned'), Type.Literal('error')]),
    total_buffering_ms: Type.Integer({ minimum: 0 }),
    dropped_frames: Type.Integer({ minimum: 0, description: 'Total for the playback.' }),
    avg_bitrate_kbps: Type.Integer({ minimum: 0 }),
  }),
]);

export const MediaEventsBody = Type.Object(
  {
    media_session_id: Uuid,
    exercise_id: Type.Optional(Uuid),
    video_id: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    events: Type.Array(MediaEvent, { minItems: 1, maxItems: 100 }),
  },
  { additionalProperties: false },
);
