// The request mixes of `npm run bench`. Every request carries a public client
// address in X-Forwarded-For (the service runs with TRUST_PROXY=true), so each
// one is geo-located as it would be behind a load balancer. The limit server
// gets exactly the same requests.
//
// Visitor ids look like the tracker's (src/tracking/tracker/tracker.browser.ts:
// 32 hex digits, the first 12 the milliseconds since the epoch, then 20
// random), so a new visitor's key lands where a browser's would: at the
// right edge of the visitors primary key and of events_visitor, after the
// ids of the visitors stored before it (`--stored` writes them the same way).
// Returning visitors keep the ids derived from their names (knownId).
import { createHash, randomBytes } from 'node:crypto';
import type { RequestFactory, Scenario } from './bench-rounds.ts';
import type { Server } from './bench-servers.ts';

export interface ScenarioContext {
  org: number;
  token: string;
  /** unique per run: ids never collide with an earlier run's */
  run: string;
  /** sends `amount` requests of `make` to the server (64 connections) */
  send(server: Server, make: RequestFactory, amount: number): Promise<void>;
}

/** public addresses in several countries (IPv4 and IPv6) */
const CLIENTS = ['193.0.6.139', '8.8.4.4', '2001:200::1', '81.2.69.160', '139.130.4.5', '1.1.1.1', '2a00:1450:4001::1', '200.160.2.3'];

export const RETURNING_VISITORS = 1000;

export const DEFAULT_SCENARIOS = ['view', 'updatecart', 'view-returning', 'updatecart-returning', 'identify', 'rates', 'mixed', 'dispatch'];
/** what `--stored N` measures unless --only says otherwise */
export const STORED_SCENARIOS = ['view', 'view-returning'];
/** accepted in --only besides the keys: `ingest` is the former name of updatecart */
export const ALIASES: Record<string, string> = { ingest: 'updatecart' };

const UPDATECART_BODY = JSON.stringify({
  cart_url: 'https://bench-shop.example/cart',
  product_id: 1234,
  line_items: [
    { quantity: 1, title: 'Linen shirt', line_price: 49.5, id: 'li-1', product_id: 1234, image_url: 'https://cdn.bench-shop.example/1234.jpg' },
  ],
  cart_value: 49.5,
});
/** a new visitor's id, as the tracker makes one: 12 hex digits of milliseconds since the epoch, then 20 random */
export const freshId = (): string => (Date.now() + 2 ** 48).toString(16).slice(1) + randomBytes(10).toString('hex');
/** a known visitor's id: 32 hex digits derived from a name, the same every time */
export const knownId = (name: string): string => createHash('sha256').update(name).digest('hex').slice(0, 32);

const VIEW_BODIES = Array.from({ length: 50 }, (_, i) => JSON.stringify({ page: `https://bench-shop.example/collections/summer?page=${i}` }));

export function buildScenarios(ctx: ScenarioContext): Map<string, Scenario> {
  const { org, token, run } = ctx;
  let seq = 0;
  const xff = (n: number) => ({ 'x-forwarded-for': CLIENTS[n % CLIENTS.length]! });
  const json = { 'content-type': 'application/json' };

  const event = (name: 'view' | 'updatecart', roaming: string, core: string, n: number) => ({
    method: 'POST' as const,
    path: `/jsv1/${org}/${roaming}/${core}/null/event/${name}`,
    body: name === 'view' ? VIEW_BODIES[n % VIEW_BODIES.length]! : UPDATECART_BODY,
    headers: { ...json, ...xff(n) },
  });

  /** a new visitor (and session) per request */
  const fresh =
    (name: 'view' | 'updatecart'): RequestFactory =>
    () => {
      const n = ++seq;
      return event(name, `r${run}-${n}`, freshId(), n);
    };

  /** RETURNING_VISITORS visitors, created once, then coming back in turn */
  const returning = (name: 'view' | 'updatecart'): Scenario => {
    const ids = Array.from({ length: RETURNING_VISITORS }, (_, i) => knownId(`k${run}-${name}-${i}`));
    const visitor = (i: number) => ids[i % RETURNING_VISITORS]!;
    let next = 0;
    const make: RequestFactory = () => {
      const i = next++;
      return event(name, `r${visitor(i)}`, visitor(i), i);
    };
    return {
      key: `${name}-returning`,
      title: `POST event/${name}, ${RETURNING_VISITORS} known visitors coming back`,
      make,
      limit: true,
      prepare: async (service) => {
        let i = 0;
        const once: RequestFactory = () => {
          const k = i++;
          return event(name, `r${visitor(k)}`, visitor(k), k);
        };
        await ctx.send(service, once, RETURNING_VISITORS);
      },
    };
  };

  const identify: RequestFactory = () => {
    const n = ++seq;
    const payload = Buffer.from(JSON.stringify({ email: `v${n}-${run}@bench.example`, name: 'Bench Visitor' })).toString('base64url');
    return { method: 'GET', path: `/jsv1/identify/${org}/r${run}-${n}/${freshId()}/${payload}`, headers: xff(n) };
  };

  const list: Scenario[] = [
    { key: 'view', title: 'POST event/view, a new visitor per request', make: fresh('view'), limit: true },
    { key: 'updatecart', title: 'POST event/updatecart, a new visitor per request', make: fresh('updatecart'), limit: true },
    returning('view'),
    returning('updatecart'),
    { key: 'identify', title: 'GET identify, a new visitor and email per request', make: identify, limit: true },
    {
      key: 'read',
      title: 'read API first page (GET organisations/{id}/events?limit=50)',
      make: () => ({ method: 'GET', path: `/v1/rest/bench/organisations/${org}/events?limit=50`, headers: { authorization: `Bearer ${token}` } }),
      limit: false,
    },
  ];
  return new Map(list.map((s) => [s.key, s]));
}
