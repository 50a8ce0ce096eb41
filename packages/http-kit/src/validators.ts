import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifyInstance } from 'fastify';
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
    return ajv.compile(schema) as ReturnType<Parameters<FastifyInstance['setValidatorCompiler']>[0]>;
  });
}
