// The browser tracker in Chromium, on a fake shop served by this test on
// 127.0.0.1 (its own node:http server, another origin than Trackway). What
// the tracker sends is observed as Chromium's own requests (beacons and
// fetches), decoded and checked against the contract's paths and bodies.
//
// End-to-end checks through the read API go in the `it`s below after the
// "sent" assertions: `srv`, `account` and `org` are a real Trackway server,
// platform account and organisation, and `readVisitor(core_id)` /
// `readEvents(query)` read them back. The fake shop and the recorder of what
// the tracker sends are in tracker-helpers.ts.
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { type Account, newAccount, newMerchant } from '../support/accounts.ts';
import { launchChromium, screenshot } from '../support/browser.ts';
import { schemaValidator } from '../support/contract.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { passesEventually } from '../support/wait.ts';
import { GARBAGE_CALLS, Recorder, type Shop, startShop } from './tracker-helpers.ts';
import type { OrgId } from '../../src/db/tenancy.ts';
import type { BodyOf } from '../support/client.ts';

const ID = /^[A-Za-z0-9._-]{1,64}$/;

/** Retries an assertion until it passes or 10 s have gone by. */
const eventually = <T>(check: () => Promise<T>): Promise<T> => passesEventually(check);

describe('browser tracker in Chromium', function () {
  let browser: Browser;
  let srv: TestServer;
  let shop: Shop;
  let account: Account;
  let org: OrgId;

  before(async function () {
    browser = await launchChromium(this);
    srv = await startTestServer();
    account = await newAccount(srv);
    // the fake shop runs on 127.0.0.1: the organisation's domain, so its product URLs reach the profile
    org = (await newMerchant(srv, account, { domain: '127.0.0.1' })).organisation.id;
    // filter_bots off: headless Chromium driven by playwright is itself a bot (tracker-bots.browser.test.ts)
    const r = await srv.api.request('PATCH', `/v1/rest/${account.platform}/organisations/${org}`, {
      body: { filter_bots: false },
      token: account.token,
    });
    expect(r.status, r.text).to.equal(200);
    shop = await startShop(srv.url, org);
  });
  after(async () => {
    await browser?.close();
    await shop?.close();
    await srv?.stop();
  });

  // read API, for the end-to-end checks (beacons land asynchronously: poll)
  const readVisitor = (core: string) =>
    srv.api.get<BodyOf<'getVisitor'>>(`/v1/rest/${account.platform}/organisations/${org}/visitors/${core}`, { token: account.token });
  const readEvents = (query = '') =>
    srv.api.get<BodyOf<'listEvents'>>(`/v1/rest/${account.platform}/organisations/${org}/events${query}`, { token: account.token });

  let context: BrowserContext;
  let page: Page;
  let rec: Recorder;
  beforeEach(async () => {
    context = await browser.newContext();
    page = await context.newPage();
    rec = await Recorder.attach(context, page, srv.url);
  });
  afterEach(async () => {
    await context?.close();
  });

  it('sends a view on load, then productview, updatecart and identify as the page calls them', async () => {
    const productUrl = `${shop.url}/products/linen-shirt`;
    await page.goto(productUrl);
    const view = await rec.event('view');
    expect(view).to.include({ method: 'POST', type: 'Ping', org: String(org), corex: null }); // a beacon
    expect(view.roaming).to.match(ID);
    expect(view.core).to.match(ID);
    expect(view.body).to.deep.equal({ page: productUrl });
    expect(view.contentType).to.match(/^text\/plain/);
    expect(schemaValidator('ViewEventBody')(view.body)).to.equal(true);

    const ids = await page.evaluate(() => (window as unknown as { trackway: { ids(): unknown } }).trackway.ids());
    expect(ids).to.deep.equal({ org_id: org, roaming_id: view.roaming, core_id: view.core, corex_id: null });

    const productview = { product_id: 7312458963, price: 59.9, product_url: productUrl };
    const updatecart = {
      cart_url: `${shop.url}/cart`,
      product_id: 7312458963,
      line_items: [
        {
          quantity: 1,
          title: 'Linen shirt - Sand / M',
          line_price: 59.9,
          id: '44012345678901',
          product_id: 7312458963,
          image_url: `${shop.url}/img/linen.jpg`,
        },
      ],
      cart_value: 59.9,
    };
    await page.evaluate(
      ([pv, uc]) => {
        const tw = (window as unknown as { trackway: { track(n: string, b: unknown): void; identify(p: unknown): void } }).trackway;
        tw.track('productview', pv);
        tw.track('updatecart', uc);
        tw.identify({ email: 'Jane.Doe@Example.com', name: 'Jane Doe ✓' });
      },
      [productview, updatecart] as const,
    );

    const pv = await rec.event('productview');
    expect(pv).to.include({ method: 'POST', roaming: view.roaming, core: view.core, corex: null });
    expect(pv.body).to.deep.equal(productview);
    expect(schemaValidator('ProductViewEventBody')(pv.body)).to.equal(true);

    const uc = await rec.event('updatecart');
    expect(uc).to.include({ method: 'POST', roaming: view.roaming, core: view.core });
    expect(uc.body).to.deep.equal(updatecart);
    expect(schemaValidator('CartEventBody')(uc.body)).to.equal(true);

    const id = await rec.next((s) => s.kind === 'identify', 'an identify call');
    expect(id).to.include({ method: 'GET', type: 'Fetch', org: String(org), roaming: view.roaming, core: view.core });
    expect(id.payload).to.deep.equal({ email: 'Jane.Doe@Example.com', name: 'Jane Doe ✓' });
    expect(schemaValidator('IdentifyPayload')(id.payload)).to.equal(true);

    expect(rec.pageErrors).to.deep.equal([]);
    await screenshot(page, 'tracker-product-page');

    // end to end: what the browser sent is stored, stitched and readable
    const stored = await eventually(async () => {
      const r = await readEvents(`?core_id=${view.core}`);
      expect(r.body.items.map((e) => e.name).sort()).to.deep.equal(['productview', 'updatecart', 'view']);
      return r.body.items;
    });
    expect(stored.find((e) => e.name === 'updatecart')!.body).to.deep.equal(updatecart);
    expect(stored.every((e) => e.roaming_id === view.roaming)).to.equal(true);
    const visitor = await eventually(async () => {
      const r = await readVisitor(view.core);
      expect(r.body.contacts).to.deep.equal([{ type: 'EMAIL', value: 'jane.doe@example.com', verified: false }]);
      return r.body;
    });
    expect(visitor.name).to.equal('Jane Doe ✓');
    expect(visitor.recent).to.deep.equal({ last_view: [productUrl], last_addtocart: productUrl });
    expect(visitor.user_agent).to.match(/Chrome/);
  });

  it('replays calls queued before the script loaded, setCorexId first so the view carries it', async () => {
    await page.goto(`${shop.url}/collections/summer`);
    const view = await rec.event('view');
    expect(view.corex).to.equal('shop-customer-7');
    const cat = await rec.event('categoryview');
    expect(cat.body).to.deep.equal({ category: 'summer' });
    expect(cat).to.include({ core: view.core, roaming: view.roaming, corex: 'shop-customer-7' });
    const id = await rec.next((s) => s.kind === 'identify', 'the queued identify');
    expect(id.payload).to.deep.equal({ email: 'queued@example.com' });
    expect(id.core).to.equal(view.core);
    // the garbage in the queue was ignored without a sound
    expect(rec.pageErrors).to.deep.equal([]);
    const api = await page.evaluate(() => {
      const tw = (window as unknown as { trackway: Record<string, unknown> }).trackway;
      return Object.keys(tw).sort();
    });
    expect(api).to.deep.equal(['identify', 'ids', 'push', 'setCorexId', 'track']);
    // push keeps working after load
    await page.evaluate(() =>
      (window as unknown as { trackway: { push(c: unknown): void } }).trackway.push([
        'track',
        'checkout',
        { checkout: 'https://shop.example/checkout' },
      ]),
    );
    const checkout = await rec.event('checkout');
    expect(checkout.body).to.deep.equal({ checkout: 'https://shop.example/checkout' });
  });

  it('keeps core_id and roaming_id across a reload, and renews roaming_id after 30 idle minutes', async () => {
    await page.clock.install();
    await page.goto(`${shop.url}/plain`);
    const first = await rec.event('view');
    rec.sent.length = 0;
    await page.reload();
    const second = await rec.event('view');
    expect(second.core).to.equal(first.core);
    expect(second.roaming).to.equal(first.roaming);
    const stored = await page.evaluate(() => [localStorage.getItem('_tw_core'), localStorage.getItem('_tw_roam')]);
    expect(stored[0]).to.match(new RegExp(`^${first.core}~`));
    expect(stored[1]).to.match(new RegExp(`^${first.roaming}~`));

    rec.sent.length = 0;
    await page.clock.fastForward('31:00');
    await page.reload();
    const third = await rec.event('view');
    expect(third.core).to.equal(first.core);
    expect(third.roaming).not.to.equal(first.roaming);
    expect(third.roaming).to.match(ID);
    expect(rec.pageErrors).to.deep.equal([]);
  });

  it('makes time-ordered core_ids: 12 hex digits of milliseconds since the epoch, then 20 random', async () => {
    const t1 = Date.parse('2026-11-26T12:00:00.000Z');
    // Date.now() fixed (timers keep running): the id's first 12 digits are known exactly
    await page.clock.setFixedTime(t1);
    await page.goto(`${shop.url}/plain`);
    const first = await rec.event('view');
    // a new visitor a second later: nothing stored any more
    await page.evaluate(() => localStorage.clear());
    await context.clearCookies();
    rec.sent.length = 0;
    await page.clock.setFixedTime(t1 + 1000);
    await page.reload();
    const second = await rec.event('view');
    for (const v of [first, second]) {
      expect(v.core).to.match(/^[0-9a-f]{32}$/);
      expect(v.core).to.match(ID); // the contract's VisitorId
      expect(v.roaming).to.match(/^[0-9a-f]{32}$/);
    }
    expect(first.core.slice(0, 12)).to.equal(t1.toString(16).padStart(12, '0'));
    expect(second.core.slice(0, 12)).to.equal((t1 + 1000).toString(16).padStart(12, '0'));
    expect(second.core > first.core, `${second.core} after ${first.core}`).to.equal(true);
    expect(second.core.slice(12)).not.to.equal(first.core.slice(12));
    expect(rec.pageErrors).to.deep.equal([]);
  });

  it('falls back to a cookie when localStorage is unavailable', async () => {
    await page.addInitScript(() => {
      Object.defineProperty(window, 'localStorage', {
        get() {
          throw new DOMException('blocked', 'SecurityError');
        },
      });
    });
    await page.goto(`${shop.url}/plain`);
    const first = await rec.event('view');
    const cookies = await context.cookies(shop.url);
    expect(cookies.find((c) => c.name === '_tw_core')?.value).to.match(new RegExp(`^${first.core}~`));
    expect(cookies.find((c) => c.name === '_tw_roam')?.value).to.match(new RegExp(`^${first.roaming}~`));
    rec.sent.length = 0;
    await page.reload();
    const second = await rec.event('view');
    expect(second.core).to.equal(first.core);
    expect(second.roaming).to.equal(first.roaming);
    expect(rec.pageErrors).to.deep.equal([]);
  });

  it('never throws into the page, whatever it is given', async () => {
    await page.goto(`${shop.url}/plain`);
    await rec.event('view');
    // a string, not a function: tsx would wrap the inner functions in a helper the page lacks
    const outcome = await page.evaluate<{ threw: string[]; ids: Record<string, unknown> }>(GARBAGE_CALLS);
    expect(outcome.threw).to.deep.equal([]);
    expect(outcome.ids).to.have.property('corex_id', null); // the invalid ids were ignored
    // the page is still alive and the tracker still works
    await page.evaluate(() =>
      (window as unknown as { trackway: { track(n: string, b: unknown): void } }).trackway.track('categoryview', { category: 'after-garbage' }),
    );
    const after = await rec.event('categoryview');
    expect(after.body).to.deep.equal({ category: 'after-garbage' });
    expect(rec.sent.filter((s) => s.name === 'bogus' || s.name === 'productview')).to.deep.equal([]);
    expect(rec.pageErrors).to.deep.equal([]);
  });
});
