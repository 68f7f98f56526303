// What identity keeps of an event (productview, updatecart, checkout, buy):
// its person's recent views and cart, and the product URL catalogue. One
// decision, used by both paths that record events: Stitching.recordEvent
// (stitching.service.ts, inside a batch's transaction) and the one-statement
// batch (src/tracking/plain-batch.service.ts, which hands profileMarks'
// output to profile-upsert.repository.ts). Pure: no database.
//
// Trust (docs/design.md "Trust"): a product or cart URL outside the
// organisation's allowed domains is kept in its event only, never in the
// profile or the product catalogue.
import type { OrgId } from '../db/tenancy.ts';
import type { ProductSighting } from './identity.repository.ts';

export type { ProductSighting } from './identity.repository.ts';

/** An event, as far as the profile and the catalogue care. */
export interface ProfileEvent {
  orgId: OrgId;
  coreId: string;
  name: string;
  body: Record<string, unknown>;
  receivedAt: Date;
  policy: { allowsUrl(url: string): boolean };
}

/**
 * The events recordEvent keeps something of (the profile, the product
 * catalogue). Events of other kinds need nothing of identity but their
 * visitors touched.
 */
export const EVENTS_RECORDED = new Set(['productview', 'updatecart', 'checkout', 'buy']);

/** What one event records: product URLs for the catalogue, a view or a cart for its person's profile. */
export interface Recorded {
  products: ProductSighting[];
  /** a product page seen (its URL allowed) */
  view: string | null;
  /** the cart changed; cartUrl null when the cart page's URL is outside the allowed domains */
  cart: { productId: number; cartUrl: string | null } | null;
}

const NOTHING: Recorded = { products: [], view: null, cart: null };

/** What identity keeps of an event (nothing for a kind it does not record). */
export function recordedBy(it: ProfileEvent): Recorded {
  if (!EVENTS_RECORDED.has(it.name)) return NOTHING;
  const body = it.body;
  const allowed = (url: unknown): url is string => typeof url === 'string' && it.policy.allowsUrl(url);
  const product = (productId: number, url: string): ProductSighting => ({ orgId: it.orgId, productId, url, at: it.receivedAt });
  if (it.name === 'productview') {
    const url = body.product_url;
    return allowed(url) ? { products: [product(body.product_id as number, url)], view: url, cart: null } : NOTHING;
  }
  if (it.name === 'updatecart') {
    // the product still counts (its URL comes from the catalogue); a foreign cart_url does not
    return { products: [], view: null, cart: { productId: body.product_id as number, cartUrl: allowed(body.cart_url) ? body.cart_url : null } };
  }
  const products: ProductSighting[] = [];
  for (const item of (body.items as { product_id: number; product_url?: string }[] | undefined) ?? []) {
    if (allowed(item.product_url)) products.push(product(item.product_id, item.product_url));
  }
  return { products, view: null, cart: null };
}

/** A view or a cart of a visitor's person, in the batch's order (`seq`): the one-statement batch groups them by person. */
export interface ProfileMark {
  orgId: OrgId;
  coreId: string;
  /** the event's place in the batch */
  seq: number;
  view: { url: string; at: string } | null;
  cart: { productId: number; cartUrl: string | null; at: Date } | null;
}

/** What a batch's events record: the marks of their persons' profiles, the catalogue's rows. */
export interface Recording {
  marks: ProfileMark[];
  products: ProductSighting[];
}

/**
 * What a batch of events records, for a batch written without Stitching:
 * each view or cart as a mark of its visitor (the statement finds the
 * person), and the catalogue's rows, one per product, the batch's last
 * sighting of it (as Stitching keeps them). Events under Global Privacy
 * Control record nothing.
 */
export function profileMarks(events: readonly (ProfileEvent & { gpc?: boolean })[]): Recording {
  const marks: ProfileMark[] = [];
  const products = new Map<string, ProductSighting>();
  events.forEach((it, seq) => {
    if (it.gpc) return;
    const r = recordedBy(it);
    for (const p of r.products) products.set(`${p.orgId}\u0000${p.productId}`, p);
    if (r.view === null && r.cart === null) return;
    marks.push({
      orgId: it.orgId,
      coreId: it.coreId,
      seq,
      view: r.view === null ? null : { url: r.view, at: it.receivedAt.toISOString() },
      // field by field: a spread with an added property gets a hidden class of its own (src/tracking/ingest.types.ts eventItem)
      cart: r.cart && { productId: r.cart.productId, cartUrl: r.cart.cartUrl, at: it.receivedAt },
    });
  });
  return { marks, products: [...products.values()] };
}
