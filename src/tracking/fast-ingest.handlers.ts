// The tracking operations the fast path (src/http/fast-path.ts) answers
// before Koa: the seven events and identify. Each runs the admission
// sequence (tracking.service.ts, as the Koa handlers do) without charging
// unless it admits, and answers what TRACKING_OPERATIONS says (operations.rules.ts,
// the Koa handlers' table too).
import type { Deps } from '../deps.ts';
import type { FastAnswer, FastHandlers, FastRequest } from '../http/types.ts';
import { type EventOperation, TRACKING_OPERATIONS, type TrackingOperation } from './operations.rules.ts';
import { type Admission, submit, tryAdmit } from './tracking.service.ts';

export function fastTrackingHandlers(deps: Deps): FastHandlers {
  /**
   * The answer of an admitted request (null: refused, handed to Koa). tryAdmit
   * decides at once when the organisation's policy is cached, and so does
   * this: no promise until the item is submitted.
   */
  function answer<K extends TrackingOperation>(
    op: K,
    a: Admission | null | Promise<Admission | null>,
    params: Parameters<(typeof TRACKING_OPERATIONS)[K]['answer']>[0],
  ): FastAnswer<K> | Promise<FastAnswer<K>> {
    if (a instanceof Promise) return a.then((admitted) => answer(op, admitted, params) as FastAnswer<K>);
    if (!a) return null;
    const reply = TRACKING_OPERATIONS[op].answer;
    return () => submit(deps, a).then(() => reply(params));
  }

  /** An event operation's request (all seven answer the same: 202 accepted). */
  function event(op: EventOperation, r: FastRequest<EventOperation>) {
    return answer(op, tryAdmit(deps, op, r, r.params, r.body), r.params);
  }

  return {
    recordViewEvent: (r) => event('recordViewEvent', r),
    recordUpdateCartEvent: (r) => event('recordUpdateCartEvent', r),
    recordRemoveFromCartEvent: (r) => event('recordRemoveFromCartEvent', r),
    recordCheckoutEvent: (r) => event('recordCheckoutEvent', r),
    recordBuyEvent: (r) => event('recordBuyEvent', r),
    recordProductViewEvent: (r) => event('recordProductViewEvent', r),
    recordCategoryViewEvent: (r) => event('recordCategoryViewEvent', r),
    identifyVisitor: (r) => answer('identifyVisitor', tryAdmit(deps, 'identifyVisitor', r, r.params), r.params),
  };
}
