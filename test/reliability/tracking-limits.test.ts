// Issue 12 point 3: tracking limits on by default. One anonymous client queued
// 200 contact matches with invented emails into another organisation in under
// a second, and 62 KB event bodies were stored whole. With the defaults
// (src/config.ts DEFAULT_TRACKING_LIMITS) the same burst is mostly refused
// (429 + Retry-After in the tracking shape), a 62 KB body is refused (413),
// oversized fields are refused (400), and a busy shop behind one NAT is never
// refused: over real HTTP for a sale-day burst, and in simulated time (the
// same limiter code and defaults, a fake clock) for an hour of it.
// Token bucket and client addresses: token-bucket.test.ts.
import { expect } from 'chai';
import { DEFAULT_TRACKING_LIMITS, loadConfig } from '../../src/config.ts';
import { BODY_LIMITS } from '../../src/http/app.ts';
import { type RefusalReason, createTrafficLimits, identityKey, requestCost } from '../../src/http/traffic-limits.ts';
import { type Merchant, newAccount, newMerchant, newWebhook } from '../support/accounts.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { b64url } from '../support/payload.ts';
import { type OrgId, testOrgId } from '../support/org-id.ts';
import type { TrackingError } from '../support/client.ts';

/** A small deterministic PRNG (mulberry32), so the simulated load is the same on every run. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Sends `n` requests made by `make`, `width` at a time. */
async function inParallel<T>(n: number, width: number, make: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < n; i += width) {
    out.push(...(await Promise.all(Array.from({ length: Math.min(width, n - i) }, (_, j) => make(i + j)))));
  }
  return out;
}

async function refusedMetric(srv: TestServer): Promise<Record<string, number>> {
  const text = await (await fetch(`${srv.url}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^trackway_tracking_refused_total\{reason="([a-z_]+)"\} (\d+)$/gm)) out[m[1]!] = Number(m[2]);
  return out;
}

/** A realistic Shopify-like cart line: ~230 bytes of JSON. */
function cartLine(i: number) {
  return {
    quantity: 1 + (i % 3),
    title: `Linen shirt ${i} - Sand / M (organic cotton blend)`,
    line_price: 59.9,
    id: String(44012345678901 + i),
    product_id: 7312458963 + i,
    image_url: `https://cdn.shopify.com/s/files/1/0123/4567/8901/products/linen-shirt-sand-${i}.jpg?v=1700000000`,
  };
}

describe('tracking limits on by default', function () {
  this.timeout(120_000);
  let srv: TestServer;
  let victim: Merchant;
  let n = 0;
  /** a documentation-range address no other test here uses */
  const address = () => `192.0.2.${(++n % 250) + 1}`;

  before(async () => {
    // the defaults, with the client address taken from X-Forwarded-For so each test is its own client
    srv = await startTestServer({ TRUST_PROXY: 'true' });
    const account = await newAccount(srv);
    victim = await newMerchant(srv, account);
    await newWebhook(srv, account, victim.organisation.id, { endpoint: 'https://hooks.example.com/victim', do_contacts: true });
  });
  after(() => srv.stop());

  const identify = (orgId: OrgId, core: string, payload: object, from: string) =>
    srv.api.get<TrackingError>(`/jsv1/identify/${orgId}/r-${core}/${core}/${b64url(payload)}`, { headers: { 'x-forwarded-for': from } });
  const event = (orgId: OrgId, core: string, name: string, body: unknown, from: string) =>
    srv.api.post<TrackingError>(`/jsv1/${orgId}/r-${core}/${core}/null/event/${name}`, body, { headers: { 'x-forwarded-for': from } });

  async function matchedDeliveries(orgId: OrgId): Promise<number> {
    const row = await srv.database.handle.db
      .selectFrom('deliveries')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('org_id', '=', orgId)
      .where('kind', '=', 'matched')
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  it('refuses most of a burst of 200 identifies with invented emails from one address (429 + Retry-After), and queues at most the identify budget of contact matches', async () => {
    const attacker = address();
    const before = await matchedDeliveries(victim.organisation.id);
    const metricBefore = await refusedMetric(srv);
    const started = Date.now();
    const replies = await inParallel(200, 50, (i) =>
      identify(victim.organisation.id, `atk-${i}`, { email: `invented-${i}@nowhere.example` }, attacker),
    );
    const seconds = (Date.now() - started) / 1000;
    const ok = replies.filter((r) => r.status === 200);
    const limited = replies.filter((r) => r.status === 429);
    expect(ok.length + limited.length, 'every answer is 200 or 429').to.equal(200);
    // the bucket refills evenly (60/min: one identify a second), so a burst that a loaded
    // machine stretches over s seconds may take up to s more than the budget
    const { limit, windowMs } = DEFAULT_TRACKING_LIMITS.identify!;
    const refilled = Math.ceil((seconds * 1000 * limit) / windowMs);
    expect(ok.length).to.be.at.most(limit + refilled);
    expect(limited.length).to.be.at.least(200 - limit - refilled);
    for (const r of limited) {
      expect(r.body.error).to.equal('rate_limited');
      expect(r.body.message).to.be.a('string');
      expect(Number(r.headers.get('retry-after'))).to.be.within(1, 60);
    }
    const queued = (await matchedDeliveries(victim.organisation.id)) - before;
    expect(queued).to.equal(ok.length);
    const metricAfter = await refusedMetric(srv);
    expect(metricAfter.identify_rate_limited! - metricBefore.identify_rate_limited!).to.equal(limited.length);
    console.log(
      `      burst of 200 identifies from one address in ${seconds.toFixed(2)} s: ${ok.length} accepted, ${limited.length} refused (429); contact matches queued: ${queued} (formerly 200)`,
    );

    // the shop's real visitors elsewhere are not affected, and repeating a known identity is free even from the limited address
    expect((await identify(victim.organisation.id, 'real-buyer', { email: 'buyer@example.com' }, address())).status).to.equal(200);
    expect((await identify(victim.organisation.id, 'atk-0', { email: 'invented-0@nowhere.example' }, attacker)).status).to.equal(200);
    expect((await event(victim.organisation.id, 'atk-0', 'view', { page: 'https://shop.example/' }, attacker)).status).to.equal(202);
  });

  it('never refuses a busy shop behind one NAT: 300 shoppers arriving at once (sale-day doors open), over HTTP', async () => {
    const shop = victim.organisation.id;
    const nat = address();
    const metricBefore = await refusedMetric(srv);
    const statuses: number[] = [];
    // every shopper's first page: a view and a product view
    for (const r of await inParallel(300, 50, (i) => event(shop, `nat-${i}`, 'view', { page: `https://shop.example/products/p${i % 40}` }, nat)))
      statuses.push(r.status);
    for (const r of await inParallel(300, 50, (i) =>
      event(shop, `nat-${i}`, 'productview', { product_id: i % 40, price: 19.9, product_url: `https://shop.example/products/p${i % 40}` }, nat),
    ))
      statuses.push(r.status);
    // 40 of them sign in or give their email now; the shop then identifies signed-in customers on every page (repeats)
    for (const r of await inParallel(40, 20, (i) => identify(shop, `nat-${i}`, { email: `shopper-${i}@nat.example` }, nat))) statuses.push(r.status);
    for (let page = 0; page < 3; page++) {
      for (const r of await inParallel(40, 20, (i) => identify(shop, `nat-${i}`, { email: `shopper-${i}@nat.example` }, nat)))
        statuses.push(r.status);
    }
    // some add to cart, with a realistic cart
    for (const r of await inParallel(60, 30, (i) =>
      event(
        shop,
        `nat-${i}`,
        'updatecart',
        { cart_url: 'https://shop.example/cart', product_id: i, line_items: [cartLine(1), cartLine(2), cartLine(3)], cart_value: 59.9 },
        nat,
      ),
    ))
      statuses.push(r.status);
    expect(
      statuses.filter((s) => s !== 200 && s !== 202),
      'refused',
    ).to.deep.equal([]);
    expect(await refusedMetric(srv)).to.deep.equal(metricBefore);
    console.log(`      one NAT address, 300 shoppers arriving at once: ${statuses.length} requests, none refused`);
  });

  it('refuses a 62 KB event body with 413 in the tracking shape (tracking bodies are at most 32 KiB), and stores nothing', async () => {
    expect(BODY_LIMITS.tracking).to.equal(32 * 1024);
    const shop = victim.organisation.id;
    const metricBefore = await refusedMetric(srv);
    // what point 3 sent: a 62 KB body (a page URL padded, and a cart padded with long titles)
    const padded = { page: `https://shop.example/?q=${'x'.repeat(62 * 1024)}` };
    const big = await event(shop, 'big-1', 'view', padded, address());
    expect(big.status).to.equal(413);
    expect(big.body).to.include({ error: 'payload_too_large' });
    const lines = Array.from({ length: 240 }, (_, i) => cartLine(i));
    const cart = { cart_url: 'https://shop.example/cart', product_id: 1, line_items: lines, cart_value: 1 };
    expect(JSON.stringify(cart).length).to.be.above(50_000);
    const bigCart = await event(shop, 'big-1', 'updatecart', cart, address());
    expect(bigCart.status).to.equal(413);
    const stored = await srv.database.handle.db.selectFrom('events').select('id').where('org_id', '=', shop).where('core_id', '=', 'big-1').execute();
    expect(stored).to.have.length(0);
    const metricAfter = await refusedMetric(srv);
    expect(metricAfter.too_large! - metricBefore.too_large!).to.equal(2);
  });

  it('caps every field of an event body: over-long strings and arrays are refused with 400; the largest realistic cart is accepted', async () => {
    const shop = victim.organisation.id;
    const from = address();
    const metricBefore = await refusedMetric(srv);
    const cases: [string, string, unknown][] = [
      [
        'a 101-line cart',
        'updatecart',
        { cart_url: 'https://shop.example/cart', product_id: 1, line_items: Array.from({ length: 101 }, (_, i) => ({ product_id: i })) },
      ],
      ['a 256-character title', 'updatecart', { cart_url: 'https://shop.example/cart', product_id: 1, line_items: [{ title: 't'.repeat(256) }] }],
      ['a 2049-character URL', 'view', { page: `https://shop.example/${'p'.repeat(2049 - 21)}` }],
      ['a 256-character category', 'categoryview', { category: 'c'.repeat(256) }],
      [
        '101 checkout items',
        'checkout',
        { checkout: 'https://shop.example/checkout', items: Array.from({ length: 101 }, (_, i) => ({ product_id: i })) },
      ],
      ['101 order items', 'buy', { order_id: '1', items: Array.from({ length: 101 }, (_, i) => ({ product_id: i })) }],
      ['a 129-character order id', 'buy', { order_id: 'o'.repeat(129) }],
      ['an unknown field', 'view', { page: 'https://shop.example/', extra: 'x' }],
    ];
    for (const [what, name, body] of cases) {
      const r = await event(shop, 'caps-1', name, body, from);
      expect(r.status, what).to.equal(400);
      expect(r.body.error, what).to.equal('invalid_request');
    }
    // identify payload fields too
    for (const payload of [{ email: `${'a'.repeat(250)}@x.example` }, { phone: '1'.repeat(33) }, { name: 'n'.repeat(201) }]) {
      const r = await identify(shop, 'caps-1', payload, from);
      expect(r.status, JSON.stringify(payload).slice(0, 30)).to.equal(400);
      expect(r.body.error).to.equal('invalid_payload');
    }
    const metricAfter = await refusedMetric(srv);
    expect(metricAfter.invalid! - metricBefore.invalid!).to.equal(cases.length + 3);

    // the largest cart the contract allows, with realistic lines, fits the body limit with room to spare
    const cart = {
      cart_url: 'https://shop.example/cart',
      product_id: 7312458963,
      line_items: Array.from({ length: 100 }, (_, i) => cartLine(i)),
      cart_value: 5990,
    };
    const size = Buffer.byteLength(JSON.stringify(cart));
    expect(size).to.be.below(BODY_LIMITS.tracking);
    const ok = await event(shop, 'caps-1', 'updatecart', cart, from);
    expect(ok.status).to.equal(202);
    console.log(`      the largest realistic cart (100 lines): ${size} bytes, ${requestCost(size)} tokens; body limit ${BODY_LIMITS.tracking} bytes`);
  });

  it('lists every refusal reason in /metrics', async () => {
    const m = await refusedMetric(srv);
    expect(Object.keys(m).sort()).to.deep.equal(['identify_rate_limited', 'invalid', 'ip_rate_limited', 'org_rate_limited', 'too_large']);
  });
});

describe('tracking limits in simulated time (the defaults, the same limiter code, a fake clock)', () => {
  const MINUTE = 60_000;

  it('never refuses an hour of a busy shop behind one NAT: 300 shoppers at once, browsing, identifying, re-identifying on every page', () => {
    let now = 0;
    const refused: RefusalReason[] = [];
    const limits = createTrafficLimits(
      'tracking',
      loadConfig({}).trackingLimits,
      (r) => refused.push(r),
      () => now,
    );
    const rnd = random(12);
    const NAT = '198.51.100.7';
    const SHOPPERS = 300;
    const SESSION = 15 * MINUTE;
    interface Shopper {
      id: number;
      next: number;
      ends: number;
      identifiesAt: number;
      identified: boolean;
      everyPage: boolean;
    }
    let made = 0;
    const shopper = (start: number): Shopper => ({
      id: made++,
      next: start,
      ends: start + SESSION,
      identifiesAt: start + rnd() * SESSION,
      identified: false,
      everyPage: rnd() < 0.5,
    });
    // sale-day doors open: everyone arrives within the first 10 seconds, and each leaving shopper is replaced
    const shoppers = Array.from({ length: SHOPPERS }, () => shopper(rnd() * 10_000));
    let requests = 0;
    let identities = 0;
    const send = (cost = 1) => {
      requests++;
      limits.ip(NAT, cost);
      limits.org(testOrgId(1), cost);
    };
    let peakMinute = 0;
    let thisMinute = 0;
    let minute = 0;
    for (;;) {
      shoppers.sort((a, b) => a.next - b.next);
      const s = shoppers[0]!;
      if (s.next > 60 * MINUTE) break;
      now = s.next;
      if (Math.floor(now / MINUTE) !== minute) {
        peakMinute = Math.max(peakMinute, thisMinute);
        thisMinute = 0;
        minute = Math.floor(now / MINUTE);
      }
      const before = requests;
      // one page: a view, a product view on most pages, an add to cart on some
      send();
      if (rnd() < 0.7) send();
      if (rnd() < 0.15) send(requestCost(1200));
      if (!s.identified && now >= s.identifiesAt) {
        send();
        limits.identify(NAT, identityKey(`1\u0000s${s.id}\u0000email`));
        limits.identified(identityKey(`1\u0000s${s.id}\u0000email`));
        s.identified = true;
        identities++;
      } else if (s.identified && s.everyPage) {
        send();
        limits.identify(NAT, identityKey(`1\u0000s${s.id}\u0000email`));
        limits.identified(identityKey(`1\u0000s${s.id}\u0000email`));
      }
      thisMinute += requests - before;
      // the next page 4 to 16 seconds later (a very active shopper: ~6 pages a minute)
      s.next = now + 4_000 + rnd() * 12_000;
      if (s.next > s.ends) shoppers[0] = shopper(s.next);
    }
    peakMinute = Math.max(peakMinute, thisMinute);
    expect(refused).to.deep.equal([]);
    console.log(
      `      one NAT address, 300 shoppers for an hour: ${requests} requests (peak ${peakMinute}/min against ${DEFAULT_TRACKING_LIMITS.ip!.limit}/min), ${identities} new identities, none refused`,
    );
  });

  it('never refuses a sale-day peak of one organisation: 2,000 shoppers on 700 addresses for 20 minutes', () => {
    let now = 0;
    const refused: RefusalReason[] = [];
    const limits = createTrafficLimits(
      'tracking',
      loadConfig({}).trackingLimits,
      (r) => refused.push(r),
      () => now,
    );
    const rnd = random(7);
    const next = Array.from({ length: 2000 }, () => rnd() * 5_000);
    let requests = 0;
    for (;;) {
      let i = 0;
      for (let j = 1; j < next.length; j++) if (next[j]! < next[i]!) i = j;
      if (next[i]! > 20 * MINUTE) break;
      now = next[i]!;
      const from = `10.${i % 7}.${i % 100}.1`;
      for (let k = 0; k < 3; k++) {
        requests++;
        limits.ip(from);
        limits.org(testOrgId(42));
      }
      next[i] = now + 4_000 + rnd() * 12_000;
    }
    expect(refused).to.deep.equal([]);
    console.log(`      one organisation, 2,000 shoppers at ~18 requests a minute each for 20 minutes: ${requests} requests, none refused`);
  });

  it('bounds what one sequential client can make Trackway store: ~6 MB a minute from one address, whatever the body sizes', () => {
    let now = 0;
    const limits = createTrafficLimits('tracking', loadConfig({}).trackingLimits, undefined, () => now);
    let stored = 0;
    // an hour of a client sending the largest body the limit allows as fast as it is let through
    for (; now < 60 * MINUTE; now += 20) {
      try {
        limits.ip('203.0.113.9', requestCost(BODY_LIMITS.tracking));
        stored += BODY_LIMITS.tracking;
      } catch {
        // refused: nothing stored
      }
    }
    const perHour = stored / 1e9;
    expect(perHour).to.be.below(0.5);
    console.log(
      `      one address sending 32 KiB bodies for an hour: ${perHour.toFixed(2)} GB stored (formerly ~20 GB/h measured from one sequential client)`,
    );
  });
});
