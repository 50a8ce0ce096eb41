import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import { AppError, errorBody, errors } from './errors.ts';

interface AjvError {
  instancePath?: string;
  keyword?: string;
  message?: string;
  params?: Record<string, unknown>;
}

/** Maps Ajv errors to `fields`: the input name (top-level property or query key) to a reason. */
export function fieldsFromValidation(list: AjvError[]): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const e of list) {
    let name = (e.instancePath ?? '').replace(/^\//, '').replace(/\//g, '.');
    let reason = e.message ?? 'is invalid';
    if (e.keyword === 'required' && typeof e.params?.missingProperty === 'string') {
      name = [name, e.params.missingProperty].filter(Boolean).join('.');
      reason = 'is required';
    } else if (e.keyword === 'additionalProperties' && typeof e.params?.additionalProperty === 'string') {
      name = [name, e.params.additionalProperty].filter(Boolean).join('.');
      reason = 'is not a known field';
    }
    if (!name) name = '_body';
    fields[name] ??= reason;
  }
  return fields;
}

/** Turns anything thrown into the spec's envelope; 5xx details go to the log, never to the client. */
export function toAppError(err: FastifyError | AppError | Error): AppError {
  if (err instanceof AppError) return err;
  const fe = err as FastifyError & { validationContext?: string };
  if (fe.validation) {
    const fields = fieldsFromValidation(fe.validation as AjvError[]);
    if (fe.validationContext === 'querystring') return errors.queryValidation(fields);
    if (fe.validationContext === 'params') return errors.notFound();
    if (fe.validationContext === 'headers') return errors.validation(fields, 'A request header is invalid; see fields.');
    return errors.validation(fields);
  }
  switch (fe.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return errors.invalidBody();
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError(413, 'payload_too_large', 'The request body is larger than this route accepts.');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError(415, 'unsupported_media_type', 'Send the body as application/json.');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new AppError(400, 'invalid_body', 'The Content-Length header does not match the body.');
    // Raised by the router before any route runs; they reach the client through frameworkErrors.
    case 'FST_ERR_BAD_URL':
      return new AppError(400, 'invalid_url', 'The request path is not a valid URL (bad percent-encoding).');
    // PostgreSQL query_canceled: the statement ran past statement_timeout (spec 8: 5 s a query).
    case '57014':
      return errors.timeout('A database query took longer than its time-out and was stopped; retry later, or narrow the request.');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      // Every path parameter is an id of 36 characters: a longer one names nothing.
      return errors.notFound();
  }
  if (err instanceof SyntaxError && fe.statusCode === 400) return errors.invalidBody();
  return errors.internal();
}

function sendError(err: FastifyError | AppError, request: FastifyRequest, reply: FastifyReply) {
  const appErr = toAppError(err);
  if (appErr.statusCode >= 500) request.log.error({ err }, 'request failed');
  if (appErr.headers) reply.headers(appErr.headers);
  return reply.status(appErr.statusCode).send(errorBody(appErr));
}

/**
 * The Fastify constructor option `frameworkErrors`: errors the router raises before routing (a path
 * with bad percent-encoding, an over-long path parameter) get the same envelope as every other
 * error, instead of Fastify's own `{ error, code, message, statusCode }` body.
 */
export function frameworkErrors(err: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  void sendError(err, request, reply);
}

/**
 * Errors of the connection itself, before there is a request to route (Node's HTTP parser): headers
 * too large (431), a request that took too long to arrive (408), bytes that are not HTTP (400). Fastify
 * would answer these in its own shape; they get the spec's envelope like every other status.
 */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, code, message] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'headers_too_large', 'The request headers are larger than the server accepts; send fewer or smaller headers.']
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'request_timeout', 'The request did not arrive in time; send it again.']
        : [400, 'bad_request', 'The request is not valid HTTP.'];
  const body = JSON.stringify(errorBody(new AppError(status, code, message)));
  if (socket.writable)
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${body}`,
    );
  socket.destroy(err);
}

/**
 * The Fastify constructor options every service passes so that statuses the server produces itself
 * (router errors, connection errors, 503 while closing) use the spec's envelope. The 503 is answered
 * by installErrorHandling, since Fastify's own one has its own shape.
 */
export const edgeServerOptions = {
  frameworkErrors,
  clientErrorHandler,
  return503OnClosing: false,
} satisfies Partial<FastifyServerOptions>;

/** `notFound`: a service that serves pages answers unknown paths with its own (HTML) page. */
export function installErrorHandling(
  app: FastifyInstance,
  opts: { notFound?: (request: FastifyRequest, reply: FastifyReply) => unknown } = {},
): void {
  app.setErrorHandler(sendError);
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  // Requests that arrive while the server closes (rolling deploys): 503 in the envelope, connection closed.
  app.addHook('onRequest', async (_request, reply) => {
    if (!closing) return;
    reply.header('connection', 'close');
    throw new AppError(503, 'shutting_down', 'The server is shutting down; retry, another instance will answer.', {
      headers: { 'retry-after': '1' },
    });
  });
  app.setNotFoundHandler(
    opts.notFound ??
      ((request, reply) => reply.status(404).send(errorBody(errors.notFound(`No route ${request.method} ${request.url.split('?')[0]}.`)))),
  );
}
