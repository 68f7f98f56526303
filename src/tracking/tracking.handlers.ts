// identifyVisitor and the seven event operations (plus the view pixel). Each
// answers only after its item is committed by the ingest path.
import type Koa from 'koa';
import type { Deps } from '../deps.ts';
import { trackingError } from '../http/errors.ts';
import { createTrafficLimits, requestCost } from '../http/traffic-limits.ts';
import type { HandlerFor, HandlerMap } from '../http/types.ts';
import type { TrackedEventName } from '../webhooks/payloads/event-exported.ts';
import { verifyIdentify } from '../identity/verification.ts';
import { decodeIdentifyPayload } from './identify-payload.ts';
import { checkOrigin } from './origin.ts';

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

interface PathIds {
  org_id: number;
  roaming_id: string;
  core_id: string;
  corex_id?: string;
}

export function trackingHandlers(deps: Deps): HandlerMap<EventOperation | 'recordViewEventPixel' | 'identifyVisitor'> {
  // tracking limits: per client address first, per organisation once it is known to exist,
  // each request weighted by its body size (src/http/traffic-limits.ts)
  const limits = createTrafficLimits('tracking', deps.config.trackingLimits, deps.metrics.trackingRefused);

  async function visitorContext(ctx: Koa.Context, ids: PathIds) {
    const cost = requestCost(bodyBytes(ctx));
    limits.ip(ctx.ip, cost);
    // one cached lookup: active, and the trust policy (no database round trip of its own)
    const policy = await deps.organisations.policy(ids.org_id);
    if (!policy?.active) {
      throw trackingError(404, 'unknown_organisation', `Organisation ${ids.org_id} does not exist or is not active`);
    }
    limits.org(ids.org_id, cost);
    checkOrigin(policy, ctx.get('origin'), ctx.get('referer'));
    const ua = ctx.get('user-agent');
    return {
      orgId: ids.org_id,
      roamingId: ids.roaming_id,
      coreId: ids.core_id,
      receivedAt: new Date(),
      userAgent: ua ? ua.slice(0, 1024) : null,
      location: deps.geo.locate(ctx.ip),
      policy,
    };
  }

  async function record(ctx: Koa.Context, ids: PathIds, name: TrackedEventName, body: Record<string, unknown>) {
    const base = await visitorContext(ctx, ids);
    const corexId = ids.corex_id === undefined || ids.corex_id === 'null' ? null : ids.corex_id;
    await deps.ingest.submit({ ...base, kind: 'event', corexId, name, body });
  }

  function event<K extends EventOperation>(name: TrackedEventName): HandlerFor<K> {
    return (async (c, ctx) => {
      await record(ctx, c.request.params as PathIds, name, c.request.requestBody as Record<string, unknown>);
      return { status: 202, body: { status: 'accepted' } };
    }) as HandlerFor<K>;
  }

  return {
    identifyVisitor: async (c, ctx) => {
      const ids = c.request.params as PathIds & { payload: string };
      const payload = decodeIdentifyPayload(ids.payload);
      const base = await visitorContext(ctx, ids);
      // identity verification: refused (403) before anything is stored
      const claim = verifyIdentify(base.policy, payload);
      // a new identity spends the address's identify budget; repeating one is free
      const identity = `${ids.org_id}\u0000${ids.core_id}\u0000${ids.payload}`;
      limits.identify(ctx.ip, identity);
      await deps.ingest.submit({ ...base, kind: 'identify', claim });
      limits.identified(identity);
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
      await record(ctx, c.request.params as PathIds, 'view', { page });
      return {
        status: 200,
        body: PIXEL as never,
        type: 'image/gif',
        headers: { 'Cache-Control': 'no-store' },
      };
    },
  };
}

