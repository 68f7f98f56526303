// identifyVisitor and the seven event operations (plus the view pixel). Each
// answers only after its item is committed by the ingest path.
import type Koa from 'koa';
import type { Deps } from '../deps.ts';
import { trackingError } from '../http/errors.ts';
import type { HandlerFor, HandlerMap } from '../http/types.ts';
import type { TrackedEventName } from '../webhooks/payloads/event-exported.ts';
import { type PathIds, type TrackingClient, trackingService } from './tracking.service.ts';

// a 1×1 transparent GIF
const PIXEL = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

type EventOperation =
  | 'recordViewEvent'
  | 'recordUpdateCartEvent'
  | 'recordRemoveFromCartEvent'
  | 'recordCheckoutEvent'
  | 'recordBuyEvent'
  | 'recordProductViewEvent'
  | 'recordCategoryViewEvent';

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

export function trackingHandlers(deps: Deps): HandlerMap<EventOperation | 'recordViewEventPixel' | 'identifyVisitor'> {
  // the rules, limits included, are shared with the fast path (src/http/fast-path.ts)
  const tracking = trackingService(deps);

  function event<K extends EventOperation>(name: TrackedEventName): HandlerFor<K> {
    return (async (c, ctx) => {
      await tracking.recordEvent(clientOf(ctx), c.request.params as PathIds, name, c.request.requestBody as Record<string, unknown>);
      return { status: 202, body: { status: 'accepted' } };
    }) as HandlerFor<K>;
  }

  return {
    identifyVisitor: async (c, ctx) => {
      const ids = c.request.params as PathIds & { payload: string };
      await tracking.identify(clientOf(ctx), ids);
      return { status: 200, body: { core_id: ids.core_id } };
    },
    recordViewEvent: event('view'),
    recordUpdateCartEvent: event('updatecart'),
    recordRemoveFromCartEvent: event('removefromcart'),
    recordCheckoutEvent: event('checkout'),
    recordBuyEvent: event('buy'),
    recordProductViewEvent: event('productview'),
    recordCategoryViewEvent: event('categoryview'),
    recordViewEventPixel: async (c, ctx) => {
      const page = (c.request.query as { page?: string } | undefined)?.page ?? ctx.get('referer');
      if (!page || !/^https?:\/\//i.test(page) || page.length > 2048 || !URL.canParse(page)) {
        throw trackingError(400, 'invalid_request', 'The page URL is missing: pass ?page= or send a Referer');
      }
      await tracking.recordEvent(clientOf(ctx), c.request.params as PathIds, 'view', { page });
      return {
        status: 200,
        body: PIXEL as never,
        type: 'image/gif',
        headers: { 'Cache-Control': 'no-store' },
      };
    },
  };
}
