// The Koa application: request id and metrics → error renderer → CORS (/jsv1)
// → site routes (docs, contract, metrics, dashboard) → content-type gate and
// size-limited body parsing → body guard (body-guard.ts) → openapi-backend
// (route, auth, validate) → handler.
import Koa from 'koa';
import bodyParser from 'koa-bodyparser';
import type { OpenAPIBackend } from 'openapi-backend';
import type { Deps } from '../deps.ts';
import { createApi } from './api.ts';
import { guardBody, guardUrl } from './body-guard.ts';
import { BODY_LIMITS } from './body-limits.ts';
import { NOT_AN_ADDRESS, resolveClientAddress } from './client-address.ts';
import { ApiError, type Area, areaError, areaOf } from './errors.ts';
import { errorFor, recordOutcome, requestIdOf } from './outcome.ts';
import { validateResponse } from './response-validation.ts';
import { siteRouter } from './site.ts';
import type { HandlerMap } from './types.ts';

export { BODY_LIMITS };

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

/** The Koa app; `api` is the contract's router and validators when the caller made them already (the fast path shares them). */
export async function createApp(deps: Deps, handlers: HandlerMap, prebuilt?: OpenAPIBackend): Promise<Koa> {
  const { log, metrics } = deps;
  const api = prebuilt ?? (await createApi(deps, handlers));
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

  // request id, metrics, and the one error renderer (src/http/outcome.ts, shared with the fast path)
  app.use(async (ctx, next) => {
    const started = process.hrtime.bigint();
    const requestId = requestIdOf(ctx.get('x-request-id'));
    ctx.state.requestId = requestId;
    ctx.set('X-Request-Id', requestId);
    const area = areaOf(ctx.path);
    const facts = () => ({ requestId, method: ctx.method, path: ctx.path, operation: ctx.state.operationId as string | undefined });
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        render(ctx, areaError(area, 'not_found', `No route for ${ctx.method} ${ctx.path}`));
      }
    } catch (raw) {
      render(ctx, errorFor(raw, area, facts(), log));
    } finally {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      recordOutcome(metrics, log, area, facts(), ctx.status, seconds);
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

  // the client's canonical address (src/http/client-address.ts), content-type gate
  // and size-limited body parsing, per area
  app.use(async (ctx, next) => {
    const area = areaOf(ctx.path);
    const ip = resolveClientAddress(ctx.get('x-forwarded-for'), ctx.req.socket.remoteAddress, deps.config.trustProxy);
    if (ip === undefined) throw areaError(area, 'validation', NOT_AN_ADDRESS);
    ctx.request.ip = ip;
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
      validateResponse(api, log, operationId, result.status, result.body);
    }
    ctx.status = result.status;
    if (result.headers) for (const [k, v] of Object.entries(result.headers)) ctx.set(k, v);
    if (result.type) ctx.type = result.type;
    if (result.body !== undefined) ctx.body = result.body;
  });

  return app;
}
