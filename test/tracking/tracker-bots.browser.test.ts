// The tracker in a browser driven by automation (README "Bots"): headless
// Chromium driven by playwright is what a headless crawler is — its
// User-Agent says HeadlessChrome and navigator.webdriver is true. On a shop
// page with the tracker (tracker-helpers.ts startShop: a view, a queued
// categoryview and identify), every request is answered as usual (202, 200)
// but, under the organisation's filter_bots (the default), nothing is stored
// and the requests are counted by reason: `user_agent` as it comes, `webdriver`
// with a desktop Chrome User-Agent (the tracker adds `?webdriver=1`). With
// filter_bots false the same visit is stored as always. The dashboard's
// overview shows the count.
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { type Account, newAccount, newMerchant, PASSWORD } from '../support/accounts.ts';
import { launchChromium, screenshot } from '../support/browser.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { eventually, passesEventually } from '../support/wait.ts';
import { Recorder, type Shop, startShop } from './tracker-helpers.ts';
import type { OrgId } from '../../src/db/tenancy.ts';

const CHROME = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/140.0.0.0 Safari/537.36';

/** Trackway's answers to the page's requests (beacons included), by URL, through DevTools. */
async function answers(context: BrowserContext, page: Page, trackwayUrl: string): Promise<Map<string, number>> {
  const urls = new Map<string, string>();
  const statuses = new Map<string, number>();
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  cdp.on('Network.requestWillBeSent', (e: { requestId: string; request: { url: string } }) => {
    if (e.request.url.startsWith(`${trackwayUrl}/jsv1/`) && !e.request.url.endsWith('/tracker.js')) urls.set(e.requestId, e.request.url);
  });
  cdp.on('Network.responseReceived', (e: { requestId: string; response: { status: number } }) => {
    const url = urls.get(e.requestId);
    if (url) statuses.set(url, e.response.status);
  });
  return statuses;
}

describe('browser tracker driven by automation (headless Chromium): kept out as a bot', function () {
  let browser: Browser;
  let srv: TestServer;
  let account: Account;
  let filtering: OrgId;
  let storing: OrgId;
  let shops: Shop[] = [];

  before(async function () {
    browser = await launchChromium(this);
    srv = await startTestServer();
    account = await newAccount(srv);
    filtering = (await newMerchant(srv, account, { domain: '127.0.0.1' })).organisation.id;
    storing = (await newMerchant(srv, account, { domain: 'localhost' })).organisation.id;
    const off = await srv.api.request('PATCH', `/v1/rest/${account.platform}/organisations/${storing}`, {
      body: { filter_bots: false },
      token: account.token,
    });
    expect(off.status, off.text).to.equal(200);
    shops = [await startShop(srv.url, filtering), await startShop(srv.url, storing)];
  });
  after(async () => {
    await browser?.close();
    for (const s of shops) await s.close();
    await srv?.stop();
  });

  async function botMetric(): Promise<Record<string, number>> {
    const text = await (await fetch(`${srv.url}/metrics`)).text();
    const out: Record<string, number> = {};
    for (const m of text.matchAll(/^trackway_bot_requests_total\{reason="([a-z_]+)"\} (\d+)$/gm)) out[m[1]!] = Number(m[2]);
    return out;
  }

  const stored = async (org: OrgId) => {
    const db = srv.deps.db;
    const [visitors, events, contacts] = await Promise.all([
      db.selectFrom('visitors').select('core_id').where('org_id', '=', org).execute(),
      db.selectFrom('events').select('name').where('org_id', '=', org).execute(),
      db.selectFrom('contacts').select('value').where('org_id', '=', org).execute(),
    ]);
    return { visitors: visitors.map((v) => v.core_id), events: events.map((e) => e.name).sort(), contacts: contacts.map((c) => c.value) };
  };

  /** Opens the shop's summer collection (a view, a queued categoryview and identify) and waits for Trackway's three answers. */
  async function visit(shop: Shop, userAgent?: string) {
    const context = await browser.newContext(userAgent ? { userAgent } : {});
    try {
      const page = await context.newPage();
      const rec = await Recorder.attach(context, page, srv.url);
      const statuses = await answers(context, page, srv.url);
      await page.goto(`${shop.url}/collections/summer`);
      const view = await rec.event('view');
      await rec.event('categoryview');
      await rec.next((s) => s.kind === 'identify', 'the identify');
      const answered = await eventually(() => (statuses.size === 3 ? new Map(statuses) : undefined), 10_000, 'the three answers');
      const facts = await page.evaluate(() => ({ webdriver: navigator.webdriver, ua: navigator.userAgent }));
      expect(rec.pageErrors).to.deep.equal([]);
      return { view, answered, facts, page, context };
    } catch (e) {
      await context.close();
      throw e;
    }
  }

  it('as it comes (HeadlessChrome, webdriver): answered as usual, nothing stored, counted as user_agent', async () => {
    const before = await botMetric();
    const { answered, facts, page, context } = await visit(shops[0]!);
    try {
      expect(facts.webdriver).to.equal(true);
      expect(facts.ua).to.include('HeadlessChrome');
      // the usual answers, and the tracker marked each request
      expect([...answered.values()].sort()).to.deep.equal([200, 202, 202]);
      for (const url of answered.keys()) expect(new URL(url).search, url).to.equal('?webdriver=1');
      expect(await stored(filtering)).to.deep.equal({ visitors: [], events: [], contacts: [] });
      const after = await botMetric();
      expect(after.user_agent).to.equal(before.user_agent! + 3);
      expect(after.webdriver).to.equal(before.webdriver);
      await screenshot(page, 'tracker-bots-headless');
    } finally {
      await context.close();
    }
  });

  it('with a desktop Chrome User-Agent, navigator.webdriver alone keeps it out (counted as webdriver); the stats show both', async () => {
    const before = await botMetric();
    const { answered, facts, context } = await visit(shops[0]!, CHROME);
    await context.close();
    expect(facts).to.deep.equal({ webdriver: true, ua: CHROME });
    expect([...answered.values()].sort()).to.deep.equal([200, 202, 202]);
    expect(await stored(filtering)).to.deep.equal({ visitors: [], events: [], contacts: [] });
    const after = await botMetric();
    expect(after.webdriver).to.equal(before.webdriver! + 3);
    expect(after.user_agent).to.equal(before.user_agent);
    await passesEventually(async () => {
      const stats = await srv.api.get(`/v1/rest/${account.platform}/organisations/${filtering}/stats`, { token: account.token });
      expect(stats.body).to.deep.include({ bots_24h: { user_agent: 3, webdriver: 3 }, events_24h: 0, visitors_24h: 0 });
    });
  });

  it("shows the bots kept out on the organisation's overview in the dashboard", async () => {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${srv.url}/dashboard`);
      await page.getByLabel('Platform name').fill(account.platform);
      await page.getByLabel('Email').fill(account.email);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'Organisations' }).waitFor();
      await page.goto(`${srv.url}/dashboard/organisations/${filtering}`);
      const count = page.locator('#bot-count');
      await count.waitFor();
      expect((await count.textContent())!.replace(/\s+/g, ' ')).to.equal(
        'Bots kept out: 6 requests in the last 24 hours (3 by their user agent, 3 from automated browsers), 6 over 7 days.',
      );
      await screenshot(page, 'tracker-bots-dashboard-overview', true);
    } finally {
      await context.close();
    }
  });

  it('with filter_bots false, the same visit is stored as always', async () => {
    const before = await botMetric();
    const { view, answered, context } = await visit(shops[1]!);
    await context.close();
    expect([...answered.values()].sort()).to.deep.equal([200, 202, 202]);
    expect(await stored(storing)).to.deep.equal({ visitors: [view.core], events: ['categoryview', 'view'], contacts: ['queued@example.com'] });
    expect(await botMetric()).to.deep.equal(before);
  });
});
