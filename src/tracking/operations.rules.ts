// The tracking operations, in one table for both transports (the Koa
// handlers, tracking.handlers.ts, and the fast path, fast-ingest.handlers.ts): what
// each asks to store (an event by its name, or an identify) and what it
// answers once that is committed.
import type { PathOf, Schemas, SuccessOf } from '../http/types.ts';

export type EventOperation =
  | 'recordViewEvent'
  | 'recordUpdateCartEvent'
  | 'recordRemoveFromCartEvent'
  | 'recordCheckoutEvent'
  | 'recordBuyEvent'
  | 'recordProductViewEvent'
  | 'recordCategoryViewEvent';

/** The view pixel answers an image: the Koa path's alone; the fast path answers the others. */
export type TrackingOperation = EventOperation | 'identifyVisitor' | 'recordViewEventPixel';

/** What a request asks to store: an event by its name, or an identify. */
export type TrackingAction = Schemas['EventName'] | 'identify';

// a 1×1 transparent GIF
const PIXEL = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

/** 202 {"status": "accepted"}: one object for every event answered. */
const ACCEPTED = { status: 202, body: { status: 'accepted' } } as const;
const accepted = () => ACCEPTED;

type Entry<K extends TrackingOperation> = {
  action: TrackingAction;
  /** the success answer, from the request's path parameters */
  answer: (ids: PathOf<K>) => SuccessOf<K>;
};

export const TRACKING_OPERATIONS: { readonly [K in TrackingOperation]: Entry<K> } = {
  recordViewEvent: { action: 'view', answer: accepted },
  recordUpdateCartEvent: { action: 'updatecart', answer: accepted },
  recordRemoveFromCartEvent: { action: 'removefromcart', answer: accepted },
  recordCheckoutEvent: { action: 'checkout', answer: accepted },
  recordBuyEvent: { action: 'buy', answer: accepted },
  recordProductViewEvent: { action: 'productview', answer: accepted },
  recordCategoryViewEvent: { action: 'categoryview', answer: accepted },
  recordViewEventPixel: {
    action: 'view',
    answer: () => ({ status: 200, body: PIXEL as never, type: 'image/gif', headers: { 'Cache-Control': 'no-store' } }),
  },
  identifyVisitor: { action: 'identify', answer: (ids) => ({ status: 200, body: { core_id: ids.core_id } }) },
};

export const EVENT_OPERATIONS: readonly EventOperation[] = [
  'recordViewEvent',
  'recordUpdateCartEvent',
  'recordRemoveFromCartEvent',
  'recordCheckoutEvent',
  'recordBuyEvent',
  'recordProductViewEvent',
  'recordCategoryViewEvent',
];
