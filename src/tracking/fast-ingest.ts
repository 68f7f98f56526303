// The tracking operations the fast path (src/http/fast-path.ts) answers
// before Koa: the seven events and identify. Each runs the admission
// sequence (tracking.service.ts, as the Koa handlers do) without charging
// unless it admits, and answers what TRACKING_OPERATIONS says (operations.ts,
// the Koa handlers' table too).
import type { Deps } from '../deps.ts';
import type { FastHandler, FastHandlers } from '../http/fast-path.ts';
import { EVENT_OPERATIONS, type FastTrackingOperation, TRACKING_OPERATIONS } from './operations.ts';
import { type TrackingIds, trackingService } from './tracking.service.ts';

export function fastTrackingHandlers(deps: Deps): FastHandlers {
  const tracking = trackingService(deps);

  const handler =
    (op: FastTrackingOperation): FastHandler =>
    async (r) => {
      const ids = r.params as unknown as TrackingIds & { corex_id: string; payload: string };
      const a = await tracking.tryAdmit(op, r, ids, r.body);
      if (!a) return null;
      return async () => {
        await tracking.submit(a);
        return TRACKING_OPERATIONS[op].answer(ids);
      };
    };

  const handlers: FastHandlers = { identifyVisitor: handler('identifyVisitor') };
  for (const op of EVENT_OPERATIONS) handlers[op] = handler(op);
  return handlers;
}
