// The tracker under Global Privacy Control, in Chromium. Chromium has no GPC
// setting of its own: an init script gives the page
// navigator.globalPrivacyControl = true, and the context sends `Sec-GPC: 1`
// with every request, as a browser with the signal on does (Firefox, Brave,
// DuckDuckGo, the GPC extensions). The shop's page queues setCorexId, an
// identify and an event before the tracker loads.
//
// - By default the tracker sends no identify at all and no corex_id; the
//   page's events still go, and the server stores them linked to no one.
// - With data-honor-gpc="false" on the script element it sends as usual,
//   and the server decides by the organisation's honor_gpc: honoured (the
//   default), nothing is linked — the browser's Sec-GPC header travels with
//   the tracker's beacons and fetches; turned off, the contact and the
//   corex_id are stored as they always were.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { type Account, newAccount, newMerchant } from '../support/accounts.ts';
import { launchChromium, screenshot } from '../support/browser.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { eventually } from '../support/wait.ts';
import { Recorder } from './tracker-helpers.ts';
import type { OrgId } from '../../src/db/tenancy.ts';
import type { BodyOf } from '../support/client.ts';

/** Trackway's answers to the page's requests (beacons included), by URL, through DevTools. */
async function answers(context: BrowserContext, page: Page, trackwayUrl: string): Promise<Map<string, number>> {
  const urls = new Map<string, string>();
  const statuses = new Map<string, number>();
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  cdp.on('Network.requestWillBeSent', (e: { requestId: string; request: { url: string } }) => {
    if (e.request.url.startsWith(`${trackwayUrl}/jsv1/`)) urls.set(e.requestId, e.request.url);
  });
  cdp.on('Network.responseReceived', (e: { requestId: string; response: { status: number } }) => {
    const url = urls.get(e.requestId);
    if (url) statuses.set(url, e.response.status);
  });
  return statuses;
}

describe('browser tracker under Global Privacy Control (Chromium)', function () {
  let browser: Browser;
  let srv: TestServer;
  let account: Account;
  let honouring: OrgId;
  let ignoring: OrgId;
  let shop: http.Server;
  let shopUrl: string;

  before(async function () {
    browser = await launchChromium(this);
    srv = await startTestServer();
    account = await newAccount(srv);
    honouring = (await newMerchant(srv, account, { domain: '127.0.0.1' })).organisation.id;
    ignoring = (await newMerchant(srv, account, { domain: 'localhost' })).organisation.id;
    const off = await srv.api.request('PATCH', `/v1/rest/${account.platform}/organisations/${ignoring}`, {
      body: { honor_gpc: false, filter_bots: false },
      token: account.token,
    });
    expect(off.status, off.text).to.equal(200);
    // filter_bots off: headless Chromium driven by playwright is itself a bot (test/tracking/tracker-bots.browser.test.ts)
    const bots = await srv.api.request('PATCH', `/v1/rest/${account.platform}/organisations/${honouring}`, {
      body: { filter_bots: false },
      token: account.token,
    });
    expect(bots.status, bots.text).to.equal(200);
    // /account?org=ID[&honor=false]: a signed-in customer's page
    shop = http.createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://shop');
      const org = Number(url.searchParams.get('org'));
      if (url.pathname !== '/account' || !Number.isSafeInteger(org)) {
        res.writeHead(404).end('not found');
        return;
      }
      const honor = url.searchParams.get('honor') === 'false' ? ' data-honor-gpc="false"' : '';
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(`<!doctype html><html><head><meta charset="utf-8"><title>Your account</title>
        <script>
          window.trackway = window.trackway || [];
          trackway.push(['setCorexId', 'customer-42']);
          trackway.push(['identify', { email: 'Private.Person@Example.com', name: 'Private Person' }]);
          trackway.push(['track', 'categoryview', { category: 'account' }]);
        </script>
        <script async src="${srv.url}/jsv1/tracker.js" data-org-id="${org}"${honor}></script>
        </head><body><h1>Your account</h1><p>Signed in as Private.Person@Example.com</p></body></html>`);
    });
    await new Promise<void>((resolve) => shop.listen(0, '127.0.0.1', resolve));
    shopUrl = `http://127.0.0.1:${(shop.address() as AddressInfo).port}`;
  });
  after(async () => {
    await browser?.close();
    shop?.closeAllConnections();
    await new Promise<void>((resolve) => (shop ? shop.close(() => resolve()) : resolve()));
    await srv?.stop();
  });

  let context: BrowserContext;
  let page: Page;
  let rec: Recorder;
  let statuses: Map<string, number>;
  beforeEach(async () => {
    // a browser with the signal on: the property for scripts, the header on every request
    context = await browser.newContext({ extraHTTPHeaders: { 'Sec-GPC': '1' } });
    // a string, not a function: tsx would wrap the getter in a helper the page lacks
    await context.addInitScript({
      content: "Object.defineProperty(Navigator.prototype, 'globalPrivacyControl', { get() { return true; }, configurable: true });",
    });
    page = await context.newPage();
    rec = await Recorder.attach(context, page, srv.url);
    statuses = await answers(context, page, srv.url);
  });
  afterEach(async () => {
    await context?.close();
  });

  const readVisitor = (org: OrgId, core: string) =>
    srv.api.get<BodyOf<'getVisitor'>>(`/v1/rest/${account.platform}/organisations/${org}/visitors/${core}`, { token: account.token });
  /** Trackway's answer to the request the tracker sent (its commit came before it). */
  const answered = (sent: { kind: string; core: string; name?: string }) =>
    eventually(
      () =>
        [...statuses].find(
          ([url]) => url.includes(`/${sent.core}/`) && url.includes(sent.kind === 'identify' ? '/identify/' : `/event/${sent.name}`),
        )?.[1],
    );

  it('sends no identify and no corex_id; the events still go, and are stored linked to no one', async () => {
    await page.goto(`${shopUrl}/account?org=${honouring}`);
    const view = await rec.event('view');
    expect(view.corex).to.equal(null);
    // queued after the identify: once it was sent, an identify would have been sent before it
    const cat = await rec.event('categoryview');
    expect(cat).to.include({ core: view.core, corex: null });
    expect(await page.evaluate(() => (navigator as unknown as { globalPrivacyControl: boolean }).globalPrivacyControl)).to.equal(true);
    // and when the page calls it after load
    await page.evaluate(() => {
      const tw = (window as unknown as { trackway: { identify(p: unknown): void; setCorexId(v: string): void; track(n: string, b: unknown): void } })
        .trackway;
      tw.identify({ email: 'later@example.com', phone: '+1 555 0100' });
      tw.setCorexId('customer-43');
      tw.track('checkout', { checkout: 'https://127.0.0.1/checkout' });
    });
    const checkout = await rec.event('checkout');
    expect(checkout.corex).to.equal(null);
    expect(rec.sent.filter((s) => s.kind === 'identify')).to.deep.equal([]);
    // the page's personal data, not any digits: a port or a random id may hold "555" (CI failed once on that)
    expect(JSON.stringify(rec.sent)).to.not.match(/private\.person|private person|later@|\+?1 ?555 ?0100|customer-4[23]/i);
    expect(rec.pageErrors).to.deep.equal([]);
    await screenshot(page, 'tracker-gpc-account-page');

    expect(await answered(checkout)).to.equal(202);
    const visitor = await readVisitor(honouring, view.core);
    expect(visitor.status, visitor.text).to.equal(200);
    expect(visitor.body).to.include({ name: null, corex_id: null });
    expect(visitor.body.contacts).to.deep.equal([]);
    const events = await srv.api.get<BodyOf<'listEvents'>>(`/v1/rest/${account.platform}/organisations/${honouring}/events?core_id=${view.core}`, {
      token: account.token,
    });
    expect(events.body.items.map((e: { name: string }) => e.name).sort()).to.deep.equal(['categoryview', 'checkout', 'view']);
  });

  it('with data-honor-gpc="false" sends as usual; the server still honours the Sec-GPC header of an organisation with honor_gpc', async () => {
    await page.goto(`${shopUrl}/account?org=${honouring}&honor=false`);
    const view = await rec.event('view');
    expect(view.corex).to.equal('customer-42');
    const id = await rec.next((s) => s.kind === 'identify', 'the identify');
    expect(id.payload).to.deep.equal({ email: 'Private.Person@Example.com', name: 'Private Person' });
    expect(await answered(id)).to.equal(200);
    expect(await answered(view)).to.equal(202);
    const visitor = await readVisitor(honouring, view.core);
    expect(visitor.body.contacts).to.deep.equal([]);
    expect(visitor.body).to.include({ name: null, corex_id: null });
  });

  it('with data-honor-gpc="false" on an organisation with honor_gpc false: linked as always', async () => {
    await page.goto(`${shopUrl}/account?org=${ignoring}&honor=false`);
    const view = await rec.event('view');
    const id = await rec.next((s) => s.kind === 'identify', 'the identify');
    expect(await answered(id)).to.equal(200);
    expect(await answered(view)).to.equal(202);
    const visitor = await readVisitor(ignoring, view.core);
    expect(visitor.body.contacts).to.deep.equal([{ type: 'EMAIL', value: 'private.person@example.com', verified: false }]);
    expect(visitor.body).to.include({ name: 'Private Person', corex_id: 'customer-42' });
  });
});
