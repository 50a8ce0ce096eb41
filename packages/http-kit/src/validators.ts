import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import { installTextGuard } from './text-guard.ts';

// ajv-formats is CommonJS; its default export arrives wrapped under NodeNext resolution.
const addFormats = (addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule;

function makeAjv(coerce: boolean): Ajv {
  const ajv = new Ajv({
    allErrors: true,
    coerceTypes: coerce ? 'array' : false,
    useDefaults: true,
    removeAdditional: false,
    strict: false,
  });
  (addFormats as unknown as (a: Ajv) => void)(ajv);
  // RFC 3339 allows year 0000, which PostgreSQL's dates and timestamps do not have (there is no year 0):
  // such a value passed the schema and failed its column with a 500.
  for (const name of ['date', 'date-time'] as const) {
    const rfc = ajv.formats[name] as { validate: (v: string) => boolean; compare: (a: string, b: string) => number | undefined };
    ajv.addFormat(name, { ...rfc, validate: (v: string) => !v.startsWith('0000') && rfc.validate(v) });
  }
  return ajv;
}

/**
 * Bodies are validated strictly (no type coercion, unknown fields rejected by the schemas), because a
 * silently coerced or ignored field in a write is a bug report waiting to happen. Query strings and
 * params are text on the wire, so they are coerced. Before any schema runs, text that no column can
 * store (NUL, unpaired surrogates) is refused in the query, the path and the body (text-guard.ts).
 */
export function installValidators(app: FastifyInstance): void {
  installTextGuard(app);
  const body = makeAjv(false);
  const text = makeAjv(true);
  app.setValidatorCompiler(({ schema, httpPart }) => {
    const ajv = httpPart === 'body' ? body : text;
    return compiledOnFirstUse(() => ajv.compile(schema)) as ReturnType<Parameters<FastifyInstance['setValidatorCompiler']>[0]>;
  });
}

type AjvValidate = ReturnType<Ajv['compile']>;

/**
 * A validator that compiles its schema on the first request that needs it. Compiling every schema of a few
 * hundred routes at start-up took about 0.45 s of the core API's 1.2 s `ready()` (profiled), paid by every
 * process start and every test file, for routes most of which that process never serves. A schema error
 * then surfaces on the route's first request instead of at start-up: the OpenAPI fuzzer and the permission
 * matrix call every route, so the test suite still finds one. Fastify reads `errors` off the function it
 * was given, and passes the parent object (so that Ajv may coerce the root) only to functions with a
 * `schemaEnv`, as Ajv's own have.
 */
function compiledOnFirstUse(compile: () => AjvValidate) {
  let fn: AjvValidate | null = null;
  const validate = (data: unknown, ctx?: Parameters<AjvValidate>[1]) => {
    fn ??= compile();
    const ok = fn(data, ctx);
    validate.errors = fn.errors;
    return ok;
  };
  validate.errors = null as AjvValidate['errors'];
  validate.schemaEnv = true;
  return validate;
}

/**
 * Fastify options of every service: response serializers compiled on first use. Each route has a schema
 * per status (the shared error statuses included), about 3,000 in the core API, and compiling them all took
 * 0.7 s of `ready()`; most are never used by a given process (an error status of a route that never fails).
 */
export const lazySerializerOptions = {
  schemaController: {
    compilersFactory: {
      buildSerializer(externalSchemas: unknown, serializerOpts: unknown) {
        const compile = SerializerSelector()(externalSchemas as never, serializerOpts as never);
        return (route: Parameters<typeof compile>[0]) => {
          let fn: ((data: unknown) => string) | null = null;
          return (data: unknown) => {
            fn ??= compile(route) as (data: unknown) => string;
            return fn(data);
          };
        };
      },
    },
  },
} satisfies Partial<FastifyServerOptions>;
