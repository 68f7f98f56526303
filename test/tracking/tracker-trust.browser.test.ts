// The tracker under the trust settings, in Chromium: a shop whose server
// computes the identity-verification hash for its signed-in customer and
// passes it through `trackway.identify({email, name, hash})`, on an
// organisation with identity verification required and enforce_origin on.
// The same page served from the shop's origin is accepted (the browser's
// own Origin headers on beacons and fetches), and from another origin it is
// refused with 403 and nothing is stored.
import { createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { type Account, newAccount, newMerchant } from '../support/accounts.ts';
import { launchChromium, screenshot } from '../support/browser.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { footprint } from '../support/trust.ts';
import { eventually } from '../support/wait.ts';
import type { OrgId } from '../../src/db/tenancy.ts';
import type { BodyOf } from '../support/client.ts';

interface Seen {
  url: string;
  method: string;
  type: string;
  status?: number;
  postData?: string;
}

/** What the page asked of Trackway (beacons included) and what Trackway answered, through DevTools. */
async function watch(context: BrowserContext, page: Page, trackwayUrl: string): Promise<Map<string, Seen>> {
  const seen = new Map<string, Seen>();
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  cdp.on('Network.requestWillBeSent', (e: { requestId: string; type?: string; request: { url: string; method: string; postData?: string } }) => {
    if (e.request.url.startsWith(`${trackwayUrl}/jsv1/`) && !e.request.url.endsWith('/tracker.js')) {
      seen.set(e.requestId, { url: e.request.url, method: e.request.method, type: e.type ?? '', postData: e.request.postData });
    }
  });
  cdp.on('Network.responseReceived', (e: { requestId: string; response: { status: number } }) => {
    const s = seen.get(e.requestId);
    if (s) s.status = e.response.status;
  });
  return seen;
}

const until = <T>(what: string, check: () => T | undefined | Promise<T | undefined>, timeoutMs = 10_000): Promise<T> =>
  eventually(check, timeoutMs, what, 100);

describe('browser tracker with identity verification and enforce_origin (Chromium)', function () {
  let browser: Browser;
  let srv: TestServer;
  let account: Account;
  let org: OrgId;
  let secret: string;
  let shop: http.Server;
  let port: number;

  before(async function () {
    browser = await launchChromium(this);
    srv = await startTestServer();
    account = await newAccount(srv);
    org = (await newMerchant(srv, account, { domain: '127.0.0.1' })).organisation.id;
    const r = await srv.api.request<BodyOf<'updateOrganisationSettings'>>('PATCH', `/v1/rest/${account.platform}/organisations/${org}`, {
      // filter_bots off: headless Chromium driven by playwright is itself a bot (test/tracking/tracker-bots.browser.test.ts)
      body: { identity_verification: 'required', enforce_origin: true, filter_bots: false },
      token: account.token,
    });
    expect(r.status, r.text).to.equal(200);
    secret = r.body.identity_secret;
    // the shop's server: it knows who is signed in and computes the hash as README shows
    shop = http.createServer((req, res) => {
      const email = 'Signed.In@Example.com';
      const hash = createHmac('sha256', secret).update(email.trim().toLowerCase()).digest('hex');
      const body = `<!doctype html><html><head><meta charset="utf-8"><title>Account</title>
        <script>
          window.trackway = window.trackway || [];
          trackway.push(['identify', { email: ${JSON.stringify(email)}, name: 'Signed In', hash: ${JSON.stringify(hash)} }]);
        </script>
        <script async src="${srv.url}/jsv1/tracker.js" data-org-id="${org}"></script>
        </head><body><h1>Your account</h1><p>Signed in as ${email}</p></body></html>`;
      res.writeHead(req.url === '/account' ? 200 : 404, { 'content-type': 'text/html; charset=utf-8' });
      res.end(req.url === '/account' ? body : 'not found');
    });
    await new Promise<void>((resolve) => shop.listen(0, '127.0.0.1', resolve));
    port = (shop.address() as AddressInfo).port;
  });
  after(async () => {
    await browser?.close();
    shop?.closeAllConnections();
    await new Promise<void>((resolve) => (shop ? shop.close(() => resolve()) : resolve()));
    await srv?.stop();
  });

  /**
   * A context whose pages see navigator.webdriver false, as a shopper's browser does: the tracker then adds no
   * `?webdriver=1` (tracker-bots.browser.test.ts) and its URLs are the plain ones this suite reads.
   */
  async function shopperContext(): Promise<BrowserContext> {
    const context = await browser.newContext();
    // a string, not a function: tsx would wrap the getter in a helper the page lacks
    await context.addInitScript({
      content: "Object.defineProperty(Navigator.prototype, 'webdriver', { get() { return false; }, configurable: true });",
    });
    return context;
  }

  it('passes the hash through identify from the shop’s origin: accepted, the link verified', async () => {
    const context = await shopperContext();
    try {
      const page = await context.newPage();
      const seen = await watch(context, page, srv.url);
      await page.goto(`http://127.0.0.1:${port}/account`);
      const identify = await until('the identify answer', () => [...seen.values()].find((s) => s.url.includes('/jsv1/identify/') && s.status));
      const view = await until('the view answer', () => [...seen.values()].find((s) => s.url.endsWith('/event/view') && s.status));
      expect(identify.status).to.equal(200);
      expect(view.status).to.equal(202);
      const payload = JSON.parse(Buffer.from(identify.url.split('/').at(-1)!, 'base64url').toString('utf8'));
      expect(payload).to.deep.equal({
        email: 'Signed.In@Example.com',
        name: 'Signed In',
        hash: createHmac('sha256', secret).update('signed.in@example.com').digest('hex'),
      });
      const core = identify.url.split('/').at(-2)!;
      const visitor = await srv.api.get<BodyOf<'getVisitor'>>(`/v1/rest/${account.platform}/organisations/${org}/visitors/${core}`, {
        token: account.token,
      });
      expect(visitor.body.contacts).to.deep.equal([{ type: 'EMAIL', value: 'signed.in@example.com', verified: true }]);
      await screenshot(page, 'tracker-verified-account-page');
    } finally {
      await context.close();
    }
  });

  it('refuses the same page served from another origin (localhost): 403 for the beacon and the identify, nothing stored', async () => {
    const context = await shopperContext();
    try {
      const page = await context.newPage();
      const errors: Error[] = [];
      page.on('pageerror', (e) => errors.push(e));
      const seen = await watch(context, page, srv.url);
      await page.goto(`http://localhost:${port}/account`);
      const identify = await until('the identify answer', () => [...seen.values()].find((s) => s.url.includes('/jsv1/identify/') && s.status));
      const view = await until('the view answer', () => [...seen.values()].find((s) => s.url.endsWith('/event/view') && s.status));
      expect(identify.status).to.equal(403);
      expect(view.status).to.equal(403);
      expect(errors, 'the tracker never throws into the page').to.deep.equal([]);
      const core = identify.url.split('/').at(-2)!;
      expect(await footprint(srv, org, core)).to.deep.equal({ visitors: 0, links: 0, events: 0 });
    } finally {
      await context.close();
    }
  });
});
