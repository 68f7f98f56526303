// The one registry of handlers, typed against the generated operations: a
// missing handler is a compile error, and boot checks it against the contract.
import type { Deps } from '../deps.ts';
import { areaError, areaOf } from './errors.ts';
import { healthHandlers } from './health.handlers.ts';
import { trackingHandlers } from '../tracking/tracking.handlers.ts';
import { eventReadHandlers } from '../tracking/events.handlers.ts';
import { visitorHandlers } from '../identity/visitors.handlers.ts';
import { platformHandlers } from '../platform/handlers.ts';
import { deliveriesHandlers } from '../webhooks/deliveries.handlers.ts';
import { trackerHandlers } from '../tracking/tracker.handlers.ts';
import { statsHandlers } from '../tracking/stats.handlers.ts';
import { analyticsHandlers } from '../analytics/handlers.ts';
import type { HandlerFor, HandlerMap, OperationId } from './types.ts';

/** An operation whose issue has not landed: 501 in its area's error body. */
export function pending<K extends OperationId>(id: K): HandlerFor<K> {
  return (_c, ctx) => {
    throw areaError(areaOf(ctx.path), 'not_implemented', `${id} is not implemented yet`);
  };
}

export function handlers(deps: Deps): HandlerMap {
  return {
    ...healthHandlers(deps),
    ...trackingHandlers(deps),
    ...eventReadHandlers(deps),
    ...visitorHandlers(deps),
    ...platformHandlers(deps),
    ...deliveriesHandlers(deps),
    ...trackerHandlers(deps),
    ...analyticsHandlers(deps),
    ...statsHandlers(deps),
  };
}
