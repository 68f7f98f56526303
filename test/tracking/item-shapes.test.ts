// Ingest items keep one hidden class per kind (src/tracking/ingest.types.ts
// eventItem says why): every function of an ingest batch reads every item,
// and in V8 (Node 20) an object literal that spreads another and adds a
// property gets a map of its own per object, which turns those reads
// megamorphic. Checked with V8's own %HaveSameMap, over many objects: the
// first few clones of a spread share a map, the later ones do not.
import v8 from 'node:v8';
import { expect } from 'chai';
import { profileMarks } from '../../src/identity/recorded.rules.ts';
import { BatchPrivacy } from '../../src/privacy/ingest-privacy.service.ts';
import { eventItem, type EventItem, type IngestItem } from '../../src/tracking/ingest.types.ts';
import { type TrackingClient, tryAdmit } from '../../src/tracking/tracking.service.ts';
import { unique, withMerchant } from '../support/accounts.ts';

v8.setFlagsFromString('--allow-natives-syntax');
// eslint-disable-next-line @typescript-eslint/no-implied-eval -- V8's intrinsic can only be reached from compiled source
const sameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: object, b: object) => boolean;

/** How many objects of one kind are compared: well past the few a spread's first clones share. */
const MANY = 60;

describe('tracking: ingest items share one hidden class per kind', () => {
  const shop = withMerchant();

  // public addresses in several places (and one nowhere), user agents or none, GPC or not, a corex_id or not
  const client = (i: number): TrackingClient => ({
    ip: ['81.2.69.142', '2a02:2770::21a:4aff:fe0b:3c2e', '203.0.113.9', '8.8.8.8'][i % 4]!,
    origin: '',
    referer: '',
    userAgent: i % 3 === 0 ? '' : `Mozilla/5.0 (test ${i})`,
    bodyChars: 40,
    gpc: i % 2 === 0,
  });
  const ids = (i: number) => ({ org_id: shop.org, roaming_id: unique('r'), core_id: unique('c'), corex_id: i % 5 === 0 ? unique('x') : 'null' });

  async function admitted(op: 'recordViewEvent' | 'recordUpdateCartEvent', n: number): Promise<EventItem[]> {
    const items: EventItem[] = [];
    for (let i = 0; i < n; i++) {
      const body = op === 'recordViewEvent' ? { page: `https://shop.example/${i}` } : { product_id: i + 1, cart_url: 'https://shop.example/cart' };
      const a = await tryAdmit(shop.srv.deps, op, client(i), ids(i), body);
      expect(a, `request ${i} admitted`).to.not.equal(null);
      items.push(a!.item as EventItem);
    }
    return items;
  }

  it('tells two hidden classes apart (the check can fail)', () => {
    const [a, b] = [eventItem(pageVisit(1), null, 'view', {}), eventItem(pageVisit(2), null, 'view', {})];
    expect(sameMap(a, b)).to.equal(true);
    expect(sameMap(a, Object.assign(eventItem(pageVisit(3), null, 'view', {}), { extra: 1 }))).to.equal(false);
  });

  it('the tracking service makes every event with the same one, whatever the request', async () => {
    const items = [...(await admitted('recordViewEvent', MANY)), ...(await admitted('recordUpdateCartEvent', MANY))];
    const odd = items.findIndex((it) => !sameMap(items[0]!, it));
    expect(odd, 'the first item with a hidden class of its own').to.equal(-1);
  });

  it('the privacy screen keeps it when it drops a corex_id under GPC', async () => {
    const [first] = await admitted('recordViewEvent', 1);
    const gpc: IngestItem[] = [];
    for (let i = 0; i < MANY; i++) gpc.push(eventItem({ ...pageVisit(i), gpc: true }, unique('x'), 'view', { page: 'https://shop.example/' }));
    const { items } = await BatchPrivacy.screen(shop.srv.deps, shop.srv.deps.db, gpc);
    expect(items).to.have.length(MANY);
    expect(items.every((it) => it.kind === 'event' && it.corexId === null)).to.equal(true);
    expect(items.findIndex((it) => !sameMap(first!, it))).to.equal(-1);
  });

  it('the cart marks an updatecart records share one as well', async () => {
    const { marks } = profileMarks(await admitted('recordUpdateCartEvent', MANY));
    const carts = marks.map((m) => m.cart!);
    expect(carts, 'one per request without GPC (every other one)').to.have.length(MANY / 2);
    expect(carts.findIndex((c) => !sameMap(carts[0]!, c))).to.equal(-1);
  });

  /** A visit as the tracking service describes one (the policy is the test organisation's). */
  function pageVisit(i: number) {
    return {
      orgId: shop.org,
      roamingId: `r${i}`,
      coreId: `c${i}`,
      receivedAt: new Date(),
      userAgent: null,
      location: null,
      policy: { identityVerification: 'optional' as const, exportUnverified: true, allowsUrl: () => true, suppressing: false },
    };
  }
});
