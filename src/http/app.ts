// The Koa application: request id and metrics → error renderer → CORS (/jsv1)
// → site routes (docs, contract, metrics, dashboard) → content-type gate and
// size-limited body parsing → body guard (body-guard.ts) → openapi-backend
// (route, auth, validate) → handler.
import { randomUUID } from 'node:crypto';
import Koa from 'koa';
import bodyParser from 'koa-bodyparser';
import type { Deps } from '../deps.ts';
import { createApi } from './api.ts';
import { guardBody, guardUrl } from './body-guard.ts';
import { ApiError, type Area, areaError, areaOf, isRejectedInput, isUnavailable, unavailableError } from './errors.ts';
import { siteRouter } from './site.ts';
import type { HandlerMap } from './types.ts';

/**
 * Tracking: 32 KiB. The largest realistic event body, a 100-line cart (the
 * contract's maximum) with shop-like titles and CDN image URLs, is about
 * 25 KB (test/reliability/tracking-limits.test.ts measures it); the per-field
 * caps in the contract bound each field, and this bounds the whole (the
 * fields' caps alone would allow far more).
 */
export const BODY_LIMITS: Record<Area, number> = {
  tracking: 32 * 1024,
  platform: 1024 * 1024,
  analytics: 1024 * 1024,
};

const JSON_TYPE = /^application\/json\s*(;|$)/i;
const TEXT_TYPE = /^text\/plain\s*(;|$)/i;

/** The body of an error as written to the client, with its request id (the X-Request-Id header's value). */
function render(ctx: Koa.Context, err: ApiError): void {
  ctx.status = err.status;
  for (const [k, v] of Object.entries(err.headers)) ctx.set(k, v);
  // refused before its body was read (413 on Content-Length, 415): the rest of
  // the body is not worth reading, and the connection cannot be reused safely
  if (!ctx.req.complete) ctx.set('Connection', 'close');
  ctx.body = { ...err.body, request_id: ctx.state.requestId as string };
}

function hasBody(ctx: Koa.Context): boolean {
  const len = ctx.get('content-length');
  return (len !== '' && len !== '0') || ctx.get('transfer-encoding') !== '';
}

/** Methods whose bodies the contract defines; a body on any other (GET, DELETE) is not read. */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

export async function createApp(deps: Deps, handlers: HandlerMap): Promise<Koa> {
  const { log, metrics } = deps;
  const api = await createApi(deps, handlers);
  // behind a proxy, trust only the entry our own proxy appended to
  // X-Forwarded-For: the ones before it are whatever the client sent
  const app = new Koa({ proxy: deps.config.trustProxy, maxIpsCount: 1 });
  app.silent = true; // errors are rendered and logged below

  const parsers: Record<Area, Koa.Middleware> = {
    tracking: bodyParser({
      enableTypes: ['json'],
      extendTypes: { json: ['text/plain'] },
      jsonLimit: `${BODY_LIMITS.tracking}b`,
      strict: true,
    }),
    platform: bodyParser({ enableTypes: ['json'], jsonLimit: `${BODY_LIMITS.platform}b`, strict: true }),
    analytics: bodyParser({ enableTypes: ['json'], jsonLimit: `${BODY_LIMITS.analytics}b`, strict: true }),
  };

  // request id, metrics, and the one error renderer
  app.use(async (ctx, next) => {
    const started = process.hrtime.bigint();
    const incoming = ctx.get('x-request-id');
    const requestId = /^[A-Za-z0-9._-]{1,64}$/.test(incoming) ? incoming : randomUUID();
    ctx.state.requestId = requestId;
    ctx.set('X-Request-Id', requestId);
    const area = areaOf(ctx.path);
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        render(ctx, areaError(area, 'not_found', `No route for ${ctx.method} ${ctx.path}`));
      }
    } catch (raw) {
      let err: ApiError;
      if (raw instanceof ApiError) err = raw;
      else if (isUnavailable(raw)) {
        err = unavailableError(area);
        log.warn({ err: raw, requestId }, 'database unavailable');
      } else if (isRejectedInput(raw)) {
        // the body guard should have refused it: worth a look, but the client's fault
        err = areaError(area, 'validation', 'The request holds a value that cannot be stored (a NUL character or too deep nesting)');
        log.warn({ err: raw, requestId, path: ctx.path, operation: ctx.state.operationId }, 'the database refused a value');
      } else if ((raw as { status?: number }).status === 413 || (raw as { type?: string }).type === 'entity.too.large') {
        err = areaError(area, 'payload_too_large', `The body exceeds the limit of ${BODY_LIMITS[area]} bytes`);
      } else if ((raw as { status?: number }).status === 400) {
        // co-body: unparsable JSON, or JSON that is not an object or array
        err = areaError(area, 'validation', 'The body is not valid JSON (an object is expected)');
      } else if ((raw as { status?: number }).status === 415) {
        err = areaError(area, 'unsupported_media_type', 'Unsupported content encoding or charset');
      } else {
        log.error({ err: raw, requestId, method: ctx.method, path: ctx.path }, 'unhandled error');
        err = areaError(area, 'internal', 'Internal error; quote the request id when reporting it');
      }
      render(ctx, err);
    } finally {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const operation = (ctx.state.operationId as string | undefined) ?? 'none';
      metrics.observeRequest(operation, ctx.status, seconds);
      // what the limits refuse (429) is counted where it is refused, with its reason
      if (area === 'tracking') {
        if (ctx.status === 413) metrics.trackingRefused('too_large');
        else if (ctx.status === 400 || ctx.status === 415) metrics.trackingRefused('invalid');
      }
      if (ctx.status >= 500) log.warn({ requestId, status: ctx.status, path: ctx.path, operation }, 'request failed');
      else if (log.isLevelEnabled('debug')) {
        log.debug({ requestId, method: ctx.method, path: ctx.path, status: ctx.status, operation, seconds }, 'request');
      }
    }
  });

  // CORS: the tracker runs on any shop's origin.
  app.use(async (ctx, next) => {
    if (areaOf(ctx.path) !== 'tracking') return next();
    ctx.set('Access-Control-Allow-Origin', '*');
    if (ctx.method === 'OPTIONS') {
      ctx.set('Access-Control-Allow-Methods', 'GET, POST, OPTIONS');
      ctx.set('Access-Control-Allow-Headers', ctx.get('access-control-request-headers') || 'Content-Type');
      ctx.set('Access-Control-Max-Age', '86400');
      ctx.status = 204;
      return;
    }
    await next();
  });

  const site = siteRouter(deps);
  app.use(site.routes());

  // content-type gate and size-limited body parsing, per area
  app.use(async (ctx, next) => {
    const area = areaOf(ctx.path);
    let decodedPath: string;
    try {
      decodedPath = decodeURIComponent(ctx.path);
    } catch {
      throw areaError(area, 'validation', 'The path holds malformed percent-encoding');
    }
    guardUrl(area, decodedPath, ctx.query);
    if (!BODY_METHODS.has(ctx.method)) return next();
    if (hasBody(ctx)) {
      const type = ctx.get('content-type');
      const ok = JSON_TYPE.test(type) || (area === 'tracking' && TEXT_TYPE.test(type));
      if (!ok) {
        const accepted = area === 'tracking' ? 'application/json or text/plain' : 'application/json';
        throw areaError(area, 'unsupported_media_type', `Content-Type must be ${accepted}`);
      }
      const declared = Number(ctx.get('content-length') || 0);
      if (declared > BODY_LIMITS[area]) {
        throw areaError(area, 'payload_too_large', `The body exceeds the limit of ${BODY_LIMITS[area]} bytes`);
      }
    }
    let parsed = false;
    try {
      await parsers[area](ctx, () => {
        parsed = true;
        // right after parsing: what PostgreSQL could not store never goes further
        guardBody(area, (ctx.request as { body?: unknown }).body);
        return next();
      });
    } catch (err) {
      // a body that does not decompress (Content-Encoding: gzip over plain bytes) is the client's
      if (!parsed && !(err instanceof ApiError) && (err as { status?: unknown }).status === undefined) {
        throw areaError(area, 'validation', 'The body cannot be decoded with its Content-Encoding');
      }
      throw err;
    }
  });

  app.use(async (ctx) => {
    const result = (await api.handleRequest(
      {
        method: ctx.method,
        path: ctx.path,
        headers: ctx.headers as Record<string, string | string[]>,
        query: ctx.query as Record<string, string | string[]>,
        body: (ctx.request as { body?: unknown }).body,
      },
      ctx,
    )) as { status: number; body?: unknown; headers?: Record<string, string>; type?: string };
    const operationId = ctx.state.operationId as string | undefined;
    if (deps.config.validateResponses && operationId && !result.type && result.body !== undefined) {
      // TRACKWAY_VALIDATE_RESPONSES (on in the test suite): drift between a
      // handler and the contract fails loudly instead of reaching a client
      const check = api.validator.validateResponse(result.body, operationId, result.status);
      if (check.errors) {
        log.error({ operationId, status: result.status, errors: check.errors }, 'response does not match the contract');
        throw new Error(`response of ${operationId} (${result.status}) does not match the contract`);
      }
    }
    ctx.status = result.status;
    if (result.headers) for (const [k, v] of Object.entries(result.headers)) ctx.set(k, v);
    if (result.type) ctx.type = result.type;
    if (result.body !== undefined) ctx.body = result.body;
  });

  return app;
}
