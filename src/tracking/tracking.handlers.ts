// The tracking operations on the Koa path: identifyVisitor, the seven event
// operations and the view pixel. Each runs the admission sequence
// (tracking.service.ts) and answers, as TRACKING_OPERATIONS says
// (operations.rules.ts), only after its item is committed by the ingest path.
import type Koa from 'koa';
import type { Deps } from '../deps.ts';
import { trackingError } from '../http/errors.ts';
import type { HandlerFor, HandlerMap } from '../http/types.ts';
import { EVENT_OPERATIONS, type EventOperation, TRACKING_OPERATIONS, type TrackingOperation } from './operations.rules.ts';
import { admit, submit, type TrackingClient } from './tracking.service.ts';

/** Size of the request body as received (0 for GET). */
function bodyBytes(ctx: Koa.Context): number {
  const raw = (ctx.request as { rawBody?: unknown }).rawBody;
  return typeof raw === 'string' ? raw.length : Number(ctx.get('content-length')) || 0;
}

/** What the tracking rules need of a Koa request. */
function clientOf(ctx: Koa.Context): TrackingClient {
  return {
    ip: ctx.ip,
    origin: ctx.get('origin'),
    referer: ctx.get('referer'),
    userAgent: ctx.get('user-agent'),
    bodyChars: bodyBytes(ctx),
    gpc: ctx.get('sec-gpc') === '1',
    webdriver: ctx.query.webdriver === '1',
  };
}

export function trackingHandlers(deps: Deps): HandlerMap<TrackingOperation> {
  // the rules, limits included, are shared with the fast path (src/http/fast-path.ts)

  function event<K extends EventOperation>(op: K): HandlerFor<K> {
    return async (c, ctx) => {
      const ids = c.request.params;
      await submit(deps, await admit(deps, op, clientOf(ctx), ids, c.request.requestBody));
      return TRACKING_OPERATIONS[op].answer(ids);
    };
  }

  const events = {} as { [K in EventOperation]: HandlerFor<K> };
  for (const op of EVENT_OPERATIONS) (events as Record<EventOperation, unknown>)[op] = event(op);

  return {
    ...events,
    identifyVisitor: async (c, ctx) => {
      const ids = c.request.params;
      await submit(deps, await admit(deps, 'identifyVisitor', clientOf(ctx), ids));
      return TRACKING_OPERATIONS.identifyVisitor.answer(ids);
    },
    recordViewEventPixel: async (c, ctx) => {
      const page = c.request.query?.page ?? ctx.get('referer');
      if (!page || !/^https?:\/\//i.test(page) || page.length > 2048 || !URL.canParse(page)) {
        throw trackingError(400, 'invalid_request', 'The page URL is missing: pass ?page= or send a Referer');
      }
      const ids = c.request.params;
      await submit(deps, await admit(deps, 'recordViewEventPixel', clientOf(ctx), ids, { page }));
      return TRACKING_OPERATIONS.recordViewEventPixel.answer(ids);
    },
  };
}
