// Recent activity of a person, as notifications and the read API show it.
import type { Kysely } from 'kysely';
import type { DB, RecentView } from '../db/schema.ts';
import { type PersonProfile, productUrl } from './identity.repository.ts';

export interface Recent {
  last_view: string[];
  last_addtocart: string | null;
}

/** Two persons' views, most recent first, distinct URLs, at most 3. */
export function mergeViews(a: RecentView[], b: RecentView[]): RecentView[] {
  const seen = new Set<string>();
  return [...a, ...b]
    .sort((x, y) => (x.at < y.at ? 1 : x.at > y.at ? -1 : 0))
    .filter((v) => !seen.has(v.url) && seen.add(v.url))
    .slice(0, 3);
}

/** The profile of two persons becoming one: views merged, the later cart kept. */
export function mergeProfiles(a: PersonProfile | undefined, b: PersonProfile | undefined): Omit<PersonProfile, 'id'> {
  const cartOf = (p: PersonProfile | undefined) => (p?.last_cart_at ? p : undefined);
  const ca = cartOf(a);
  const cb = cartOf(b);
  const cart = ca && cb ? (ca.last_cart_at! >= cb.last_cart_at! ? ca : cb) : (ca ?? cb);
  return {
    last_view: mergeViews(a?.last_view ?? [], b?.last_view ?? []),
    last_cart_product_id: cart?.last_cart_product_id ?? null,
    last_cart_url: cart?.last_cart_url ?? null,
    last_cart_at: cart?.last_cart_at ?? null,
  };
}

/**
 * last_addtocart is the URL of the product in the last updatecart: the latest
 * product_url seen for its product_id, else the cart_url.
 */
export async function recentActivity(
  tx: Kysely<DB>,
  orgId: number,
  profile: Pick<PersonProfile, 'last_view' | 'last_cart_product_id' | 'last_cart_url'> | undefined,
): Promise<Recent> {
  if (!profile) return { last_view: [], last_addtocart: null };
  let addToCart = profile.last_cart_url;
  if (profile.last_cart_product_id !== null) {
    addToCart = (await productUrl(tx, orgId, profile.last_cart_product_id)) ?? addToCart;
  }
  return { last_view: profile.last_view.map((v) => v.url), last_addtocart: addToCart };
}
