/**
 * Typed client of the core API. One method per OpenAPI operation, named by its operation id
 * (spec 9.5): `client.getMe()`, `client.getOrganization({ params: { id } })`,
 * `client.resolveOrganization({ query: { slug } })`, `client.switchOrganization({ body })`.
 *
 * The methods come from the generated `operations.ts` table and their types from the generated
 * `schema.d.ts` (both from `openapi.json`; regenerate with `npm run client:generate`). This file is
 * the only hand-written part: it sends JSON over `fetch`, adds the bearer token, X-Organization-ID
 * and Idempotency-Key, and turns the error envelope of spec 2.2 into an `ApiError`.
 */
import { operations } from './operations.ts';
import type { operations as Operations } from './schema.d.ts';

export { operations };
export type { components, operations as Operations, paths } from './schema.d.ts';

export type OperationId = keyof typeof operations & keyof Operations;

// ---------------------------------------------------------------------------------------------
// Errors

/** The `error` member of the error envelope (spec 2.2); `fields` only on validation errors. */
export interface ErrorBody {
  code: string;
  message: string;
  fields?: Record<string, string>;
}

export interface ErrorEnvelope {
  error: ErrorBody;
}

/**
 * A non-2xx answer. `code`, `message` and `fields` come from the envelope; an answer without one
 * (a proxy's HTML 502, say) gets code `unexpected_response` and its text in `message`.
 */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly status: number;
  readonly code: string;
  readonly fields: Record<string, string> | undefined;
  readonly body: ErrorEnvelope;
  readonly headers: Headers;
  readonly operationId: OperationId;

  constructor(operationId: OperationId, status: number, body: ErrorEnvelope, headers: Headers) {
    super(body.error.message);
    this.operationId = operationId;
    this.status = status;
    this.code = body.error.code;
    this.fields = body.error.fields;
    this.body = body;
    this.headers = headers;
  }
}

export function isApiError(err: unknown): err is ApiError {
  return err instanceof ApiError;
}

// ---------------------------------------------------------------------------------------------
// Types of one operation, read from schema.d.ts

type SuccessStatus = 200 | 201 | 202 | 203 | 204 | 205 | 206 | 207 | 208 | 226;
type JsonOf<R> = R extends { content: { 'application/json': infer J } } ? J : undefined;
type ParametersOf<Op> = Op extends { parameters: infer P } ? P : {};

/** `{ [As]: T[K] }`, optional when T[K] is; nothing when T[K] is never (openapi-typescript's "none"). */
type Slot<T, K extends PropertyKey, As extends string> = K extends keyof T
  ? [NonNullable<T[K]>] extends [never]
    ? {}
    : {} extends Pick<T, K>
      ? { [_ in As]?: NonNullable<T[K]> }
      : { [_ in As]: T[K] }
  : {};

type BodySlot<Op> = 'requestBody' extends keyof Op
  ? Op extends { requestBody?: infer B }
    ? [NonNullable<B>] extends [never]
      ? {}
      : Op extends { requestBody: unknown }
        ? { body: JsonOf<NonNullable<B>> }
        : { body?: JsonOf<NonNullable<B>> }
    : {}
  : {};

/** Options any call accepts, next to its params, query and body. */
export interface CallOptions {
  /** Idempotency-Key (spec 4.1): 4 to 128 of A-Z a-z 0-9 _ -; honoured by POST routes that create. */
  idempotencyKey?: string;
  /** X-Organization-ID for this call; null sends none. Default: the client's organizationId. */
  organizationId?: string | null;
  /** Bearer token for this call; null sends none. Default: the client's token. */
  token?: string | null;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

/** What a method takes: `params` (path), `query` and `body` as the operation declares them. */
export type RequestOf<K extends OperationId> = Slot<ParametersOf<Operations[K]>, 'path', 'params'> &
  Slot<ParametersOf<Operations[K]>, 'query', 'query'> &
  BodySlot<Operations[K]> &
  CallOptions;

type Success<Op> = Op extends { responses: infer R }
  ? { [S in keyof R & SuccessStatus]: { status: S; data: JsonOf<R[S]> } }[keyof R & SuccessStatus]
  : never;

/** The 2xx body of an operation, e.g. `ResponseOf<'getMe'>['data']['email']`. */
export type ResponseOf<K extends OperationId> = Success<Operations[K]>['data'];

/** What a method resolves to: `data` is the parsed 2xx body (the envelope itself, not its `data` member). */
export type Result<K extends OperationId, Throw extends boolean = true> =
  | (Success<Operations[K]> & { error: null; headers: Headers })
  | (Throw extends true ? never : { status: number; data: null; error: ApiError; headers: Headers });

type Args<K extends OperationId> = {} extends RequestOf<K> ? [request?: RequestOf<K>] : [request: RequestOf<K>];

/** One method per operation id. With `throwOnError: false`, errors resolve as `{ data: null, error }`. */
export type Client<Throw extends boolean = true> = {
  readonly [K in OperationId]: (...args: Args<K>) => Promise<Result<K, Throw>>;
};

// ---------------------------------------------------------------------------------------------
// Runtime

type TokenSource = string | null | undefined | (() => string | null | undefined | Promise<string | null | undefined>);

export interface ClientOptions {
  /** Where the API lives, e.g. `https://api.example.com` (a path prefix is kept). */
  baseUrl: string;
  /** Bearer token, or a function returning the current one (called on every request). */
  token?: TokenSource;
  /** X-Organization-ID sent on every call unless the call overrides it. */
  organizationId?: string | null;
  /** Defaults to the global fetch. */
  fetch?: typeof fetch;
  /** Extra headers on every call. */
  headers?: Record<string, string>;
  /** Default true: non-2xx answers reject with ApiError. False: they resolve as `{ data: null, error }`. */
  throwOnError?: boolean;
}

interface LooseRequest extends CallOptions {
  params?: Record<string, unknown>;
  query?: Record<string, unknown>;
  body?: unknown;
}

function fillPath(id: string, template: string, params: Record<string, unknown> | undefined): string {
  return template.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const v = params?.[name];
    if (v === undefined || v === null || v === '') throw new TypeError(`${id}: missing path parameter "${name}"`);
    return encodeURIComponent(String(v));
  });
}

function queryString(query: Record<string, unknown> | undefined): string {
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) {
    if (v === undefined || v === null) continue;
    for (const item of Array.isArray(v) ? v : [v]) qs.append(k, String(item));
  }
  const s = qs.toString();
  return s ? `?${s}` : '';
}

function isEnvelope(v: unknown): v is ErrorEnvelope {
  const e = (v as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  return typeof e === 'object' && e !== null && typeof e.code === 'string' && typeof e.message === 'string';
}

export function createClient(options: ClientOptions & { throwOnError: false }): Client<false>;
export function createClient(options: ClientOptions): Client<true>;
export function createClient(options: ClientOptions): Client<boolean> {
  const base = options.baseUrl.replace(/\/+$/, '');
  const doFetch = options.fetch ?? globalThis.fetch;
  const throwOnError = options.throwOnError ?? true;

  async function call(id: OperationId, req: LooseRequest = {}): Promise<unknown> {
    const op = operations[id];
    const url = base + fillPath(id, op.path, req.params) + queryString(req.query);
    const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
    const token = req.token !== undefined ? req.token : typeof options.token === 'function' ? await options.token() : options.token;
    if (token) headers.authorization = `Bearer ${token}`;
    const org = req.organizationId !== undefined ? req.organizationId : options.organizationId;
    if (org) headers['x-organization-id'] = org;
    if (req.idempotencyKey !== undefined) headers['idempotency-key'] = req.idempotencyKey;
    // Only with a body: Fastify rejects an empty body declared as JSON.
    if (req.body !== undefined) headers['content-type'] = 'application/json';
    Object.assign(headers, req.headers);

    const res = await doFetch(url, {
      method: op.method,
      headers,
      ...(req.body !== undefined ? { body: JSON.stringify(req.body) } : {}),
      ...(req.signal ? { signal: req.signal } : {}),
    });
    const text = await res.text();
    let parsed: unknown;
    let parseFailed = false;
    if (text !== '') {
      try {
        parsed = JSON.parse(text);
      } catch {
        parseFailed = true;
      }
    }
    if (res.ok && !parseFailed) return { status: res.status, data: parsed, error: null, headers: res.headers };

    const envelope: ErrorEnvelope =
      !res.ok && isEnvelope(parsed)
        ? parsed
        : {
            error: {
              code: 'unexpected_response',
              message: `${op.method} ${op.path} answered ${res.status} with ${res.ok ? 'a body that is not JSON' : 'no error envelope'}: ${text.slice(0, 200)}`,
            },
          };
    const error = new ApiError(id, res.status, envelope, res.headers);
    if (throwOnError) throw error;
    return { status: res.status, data: null, error, headers: res.headers };
  }

  const client: Record<string, (req?: LooseRequest) => Promise<unknown>> = {};
  for (const id of Object.keys(operations) as OperationId[]) client[id] = (req) => call(id, req);
  return Object.freeze(client) as unknown as Client<boolean>;
}
