import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { DataOf, ErrorResponse, errors, installHealthRoute } from '@clinic/http-kit';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { Composer } from './service.ts';
import { requireSignature } from './signature-hook.ts';

export const ComposeBody = Type.Object(
  {
    exercise: Type.String({ pattern: '^[a-z0-9]+(-[a-z0-9]+)*$', maxLength: 100, description: 'exercise slug' }),
    language: Type.String({ pattern: '^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$', maxLength: 35, description: 'must be listed in the manifest' }),
    sets: Type.Array(
      Type.Object(
        {
          side: Type.Union([Type.Literal('left'), Type.Literal('right')]),
          reps: Type.Integer({ minimum: 5, maximum: 20, multipleOf: 5 }),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: 50 },
    ),
    seed: Type.Integer({ minimum: -Number.MAX_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER, description: 'same seed, same variants' }),
  },
  { additionalProperties: false },
);

export const Render = Type.Object({
  id: Type.String(),
  exercise: Type.String(),
  language: Type.String(),
  recipe_hash: Type.String(),
  asset_version: Type.Integer(),
  status: Type.Union([Type.Literal('processing'), Type.Literal('ready')]),
  stream_video_id: Type.String(),
  playback_hls_url: Type.String(),
  duration_seconds: Type.Union([Type.Number(), Type.Null()]),
  cached: Type.Boolean({ description: 'true when an existing render answered' }),
});

export interface RouteOptions {
  composer: Composer;
  authSecrets: string[] | null;
  authMaxSkewSeconds: number;
  /** The local HLS provider's file lookup; absent when videos go to a remote provider. */
  hlsFile?: (id: string, file: string) => string | null;
}

export function composerRoutes(app: FastifyInstance, o: RouteOptions): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.post(
    '/v1/compose',
    {
      // The signature before anything else judges the request (its size, parsing, text, validation):
      // an unsigned caller learns only 401.
      preParsing: requireSignature(o.authSecrets, o.authMaxSkewSeconds),
      schema: {
        operationId: 'compose',
        body: ComposeBody,
        response: {
          200: DataOf(Render),
          201: DataOf(Render),
          400: ErrorResponse,
          401: ErrorResponse,
          413: ErrorResponse,
          415: ErrorResponse,
          422: ErrorResponse,
          500: ErrorResponse,
          502: ErrorResponse,
          503: ErrorResponse,
        },
      },
    },
    async (request, reply) => {
      const { row, exercise, created } = await o.composer.compose(request.body);
      reply.status(created ? 201 : 200);
      return {
        data: {
          id: row.id,
          exercise,
          language: row.language,
          recipe_hash: row.recipe_hash,
          asset_version: row.asset_version,
          status: row.status as 'processing' | 'ready',
          stream_video_id: row.stream_video_id!,
          playback_hls_url: row.playback_hls_url!,
          duration_seconds: row.duration_seconds,
          cached: !created,
        },
      };
    },
  );

  // Players fetch playlists and segments without credentials; ids are random UUIDs and the
  // content is library video, not patient data.
  if (o.hlsFile) {
    const hlsFile = o.hlsFile;
    r.get(
      '/v1/hls/:id/:file',
      {
        schema: {
          operationId: 'getHlsFile',
          summary: 'A playlist or segment of a local render (embedded default only); no credentials',
          params: Type.Object({ id: Type.String({ maxLength: 36 }), file: Type.String({ maxLength: 20 }) }),
        },
      },
      async (request, reply) => {
        const path = hlsFile(request.params.id, request.params.file);
        const size = path
          ? await stat(path).then(
              (s) => s.size,
              () => null,
            )
          : null;
        if (!path || size === null) throw errors.notFound();
        const playlist = path.endsWith('.m3u8');
        reply.header('content-type', playlist ? 'application/vnd.apple.mpegurl' : 'video/mp2t');
        reply.header('content-length', String(size));
        reply.header('access-control-allow-origin', '*');
        // A VOD playlist appears complete and never changes, so everything is immutable.
        reply.header('cache-control', 'public, max-age=31536000, immutable');
        return reply.send(createReadStream(path));
      },
    );
  }

  installHealthRoute(app);
}
