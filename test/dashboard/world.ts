// The dashboard browser test's world (dashboard.browser.test.ts): one real
// server with a dispatcher, Chromium, a platform account with 27 merchants
// (one with tracked visitors), two receivers; a page that reports problems,
// and sign-in. The state is set by the hooks dashboardWorld() adds to the
// calling describe, and read through these (live) bindings.
import { expect } from 'chai';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { type Account, newAccount, newMerchant, PASSWORD, unique } from '../support/accounts.ts';
import { launchChromium } from '../support/browser.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { TestReceiver } from '../support/receiver.ts';

export const DESKTOP = { width: 1280, height: 800 };
export const PHONE = { width: 390, height: 844 };

let browser: Browser;
export let srv: TestServer;
export let account: Account;
export let org: { id: number; domain: string; token: string };
/** an organisation with no activity, for the empty states */
export let quiet: { id: number } | undefined;
export let testReceiver: TestReceiver;
export let failingReceiver: TestReceiver;
// public addresses of known places, as a proxy in front of Trackway reports them (TRUST_PROXY)
export const visitorA = { core: unique('ca'), roaming: unique('ra'), ip: '193.0.6.139' }; // RIPE NCC, Amsterdam
export const visitorB = { core: unique('cb'), roaming: unique('rb'), ip: '2001:200::1' }; // WIDE project, Japan
export const problems: string[] = [];

async function track(v: typeof visitorA, name: string, body: Record<string, unknown>) {
  const r = await srv.api.post(`/jsv1/${org.id}/${v.roaming}/${v.core}/null/event/${name}`, body, { headers: { 'x-forwarded-for': v.ip } });
  expect(r.status, r.text).to.equal(202);
}

/** A context and page that report page errors, CSP violations and requests leaving the server. */
export async function open(viewport: { width: number; height: number }): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport, deviceScaleFactor: 1, isMobile: viewport.width < 500, hasTouch: viewport.width < 500 });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: srv.url });
  const page = await context.newPage();
  page.on('pageerror', (e) => problems.push(`page error: ${String(e)}`));
  page.on('console', (m) => {
    // refused requests (401 on purpose, 404s) are the app's business; anything else is a problem
    if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) problems.push(`console: ${m.text()}`);
  });
  page.on('request', (r) => {
    if (!r.url().startsWith(srv.url) && !r.url().startsWith('data:')) problems.push(`request leaving the server: ${r.url()}`);
  });
  return { context, page };
}

export const visible = (l: Locator, timeout = 10_000) => l.waitFor({ state: 'visible', timeout });

export async function fitsWidth(page: Page, width: number, what: string) {
  const scroll = await page.evaluate(() => document.documentElement.scrollWidth);
  expect(scroll, `${what}: page width in px`).to.be.at.most(width);
}

export async function signIn(page: Page) {
  await page.goto(`${srv.url}/dashboard`);
  await page.getByLabel('Platform name').fill(account.platform);
  await page.getByLabel('Email').fill(account.email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await visible(page.getByRole('heading', { name: 'Organisations' }));
}

/** Starts the world before the calling describe's tests and stops it after them. */
export function dashboardWorld(): void {
  before(async function () {
    browser = await launchChromium(this);
    srv = await startTestServer(
      { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_RETRY_SCHEDULE: '200ms', TRUST_PROXY: 'true' },
      { dispatcher: true },
    );
    account = await newAccount(srv);
    testReceiver = await TestReceiver.start(() => ({ status: 200, body: '{"ok":true}' }));
    failingReceiver = await TestReceiver.start(() => ({ status: 500, body: 'receiver is down' }));
    // 26 older merchants (paging at 25), then the one the flows use, the newest
    for (let i = 0; i < 26; i++) {
      const m = await newMerchant(srv, account, { domain: `${unique('older')}.shop.example` });
      quiet ??= m.organisation;
    }
    // the shop's product URLs are under its own domain, so they reach the visitor's recent activity
    const main = await newMerchant(srv, account, { domain: 'linen.example', organisation_name: "Jane's Linen Shop" });
    org = main.organisation;
    await track(visitorA, 'view', { page: 'https://linen.example/' });
    await track(visitorA, 'productview', { product_id: 11, price: 59.9, product_url: 'https://linen.example/products/linen-shirt' });
    await track(visitorA, 'updatecart', { product_id: 11, cart_url: 'https://linen.example/cart', cart_value: 59.9, line_items: [] });
    await track(visitorB, 'view', { page: 'https://linen.example/sale' });
  });
  after(async () => {
    await browser?.close();
    await testReceiver?.close();
    await failingReceiver?.close();
    await srv?.stop();
  });
}
