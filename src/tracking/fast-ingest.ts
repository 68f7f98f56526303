// The tracking operations the fast path (src/http/fast-path.ts) answers
// before Koa: the seven events and identify. Each asks the tracking service
// (the rules the Koa handlers apply too) whether anything would refuse the
// request, and answers exactly what its Koa handler answers
// (tracking.handlers.ts): 202 {"status": "accepted"}, 200 {core_id}.
import type { Deps } from '../deps.ts';
import type { FastHandler, FastHandlers } from '../http/fast-path.ts';
import type { TrackedEventName } from '../webhooks/payloads/event-exported.ts';
import { type TrackingIds, trackingService } from './tracking.service.ts';

export function fastTrackingHandlers(deps: Deps): FastHandlers {
  const tracking = trackingService(deps);

  const event =
    (name: TrackedEventName): FastHandler =>
    async (r) => {
      const a = await tracking.tryAdmit(r, r.params as unknown as TrackingIds, name, r.body);
      if (!a) return null;
      return async () => {
        await tracking.submit(a);
        return { status: 202, body: { status: 'accepted' } };
      };
    };

  return {
    recordViewEvent: event('view'),
    recordUpdateCartEvent: event('updatecart'),
    recordRemoveFromCartEvent: event('removefromcart'),
    recordCheckoutEvent: event('checkout'),
    recordBuyEvent: event('buy'),
    recordProductViewEvent: event('productview'),
    recordCategoryViewEvent: event('categoryview'),
    identifyVisitor: async (r) => {
      const ids = r.params as unknown as TrackingIds;
      const a = await tracking.tryAdmit(r, ids, 'identify');
      if (!a) return null;
      return async () => {
        await tracking.submit(a);
        return { status: 200, body: { core_id: ids.core_id } };
      };
    },
  };
}
