// The tracking operations the fast path (src/http/fast-path.ts) answers
// before Koa: the seven events and identify. Each runs the admission
// sequence (tracking.service.ts, as the Koa handlers do) without charging
// unless it admits, and answers what TRACKING_OPERATIONS says (operations.rules.ts,
// the Koa handlers' table too).
import type { Deps } from '../deps.ts';
import type { FastHandlers, FastRequest, SuccessOf } from '../http/types.ts';
import { type EventOperation, TRACKING_OPERATIONS } from './operations.rules.ts';
import { submit, tryAdmit } from './tracking.service.ts';

export function fastTrackingHandlers(deps: Deps): FastHandlers {
  /** An event operation's request (all seven answer the same: 202 accepted). */
  async function event(op: EventOperation, r: FastRequest<EventOperation>): Promise<(() => Promise<SuccessOf<'recordViewEvent'>>) | null> {
    const a = await tryAdmit(deps, op, r, r.params, r.body);
    if (!a) return null;
    return async () => {
      await submit(deps, a);
      return TRACKING_OPERATIONS[op].answer(r.params);
    };
  }

  return {
    recordViewEvent: (r) => event('recordViewEvent', r),
    recordUpdateCartEvent: (r) => event('recordUpdateCartEvent', r),
    recordRemoveFromCartEvent: (r) => event('recordRemoveFromCartEvent', r),
    recordCheckoutEvent: (r) => event('recordCheckoutEvent', r),
    recordBuyEvent: (r) => event('recordBuyEvent', r),
    recordProductViewEvent: (r) => event('recordProductViewEvent', r),
    recordCategoryViewEvent: (r) => event('recordCategoryViewEvent', r),
    identifyVisitor: async (r) => {
      const a = await tryAdmit(deps, 'identifyVisitor', r, r.params);
      if (!a) return null;
      return async () => {
        await submit(deps, a);
        return TRACKING_OPERATIONS.identifyVisitor.answer(r.params);
      };
    },
  };
}
