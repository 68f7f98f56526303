// Recent activity of a person, as notifications and the read API show it.
import type { Kysely } from 'kysely';
import type { DB, RecentView } from '../db/schema.ts';
import { type PersonProfile, productUrl } from './identity.repository.ts';
import type { OrgId } from '../db/tenancy.ts';

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
 * product_url seen for its product_id, else the cart_url. Only URLs the
 * organisation's policy allows are shown (`allows`, its allowed domains as
 * they are now): what was recorded before a change of allowed_domains is
 * filtered again here, for notifications and the read API alike.
 */
export async function recentActivity(
  tx: Kysely<DB>,
  orgId: OrgId,
  profile: Pick<PersonProfile, 'last_view' | 'last_cart_product_id' | 'last_cart_url'> | undefined,
  allows: (url: string) => boolean,
): Promise<Recent> {
  if (!profile) return { last_view: [], last_addtocart: null };
  let addToCart = profile.last_cart_url !== null && allows(profile.last_cart_url) ? profile.last_cart_url : null;
  if (profile.last_cart_product_id !== null) {
    const url = await productUrl(tx, orgId, profile.last_cart_product_id);
    if (url !== undefined && allows(url)) addToCart = url;
  }
  return { last_view: profile.last_view.map((v) => v.url).filter(allows), last_addtocart: addToCart };
}
