// The dashboard in Chromium for issue 15: a merchant who registered through
// the analytics API signs in and sees its own organisation (token, tracker
// snippet, integrations, visitors, learning events); a platform account
// registers a merchant from the dashboard and reads a delivery's payload;
// the overview ends where its content ends; an unknown visitor says so; a
// rate-limited sign-in says for how long. Screenshots go to
// test-artifacts/screenshots/merchant-*.png.
import { expect } from 'chai';
import type { Browser, Locator, Page } from 'playwright-core';
import { REGISTRATION_TOKEN, register, registration } from '../support/registration.ts';
import { type Account, newAccount, newMerchant, newWebhook, PASSWORD, unique } from '../support/accounts.ts';
import { launchChromium, screenshot } from '../support/browser.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { TestReceiver } from '../support/receiver.ts';
import { b64url } from '../support/payload.ts';

const DESKTOP = { width: 1280, height: 800 };

describe('dashboard in Chromium: merchants, registration, payloads (issue 15)', function () {
  this.timeout(60_000);
  let browser: Browser;
  let srv: TestServer;
  let account: Account;
  let receiver: TestReceiver;
  const problems: string[] = [];

  async function open(): Promise<Page> {
    const context = await browser.newContext({ viewport: DESKTOP, deviceScaleFactor: 1 });
    const page = await context.newPage();
    page.on('pageerror', (e) => problems.push(`page error: ${String(e)}`));
    page.on('console', (m) => {
      if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) problems.push(`console: ${m.text()}`);
    });
    return page;
  }
  const visible = (l: Locator, timeout = 10_000) => l.waitFor({ state: 'visible', timeout });

  async function signInPlatform(page: Page) {
    await page.goto(`${srv.url}/dashboard`);
    await page.getByLabel('Platform name').fill(account.platform);
    await page.getByLabel('Email').fill(account.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await visible(page.getByRole('heading', { name: 'Organisations' }));
  }

  before(async function () {
    browser = await launchChromium(this);
    // a low per-email limit, so the rate-limited sign-in is reached in three tries
    srv = await startTestServer({ REGISTRATION_TOKEN, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', LOGIN_RATE_LIMIT: '2/15m' }, { dispatcher: true });
    account = await newAccount(srv);
    receiver = await TestReceiver.start(() => ({ status: 204 }));
  });
  after(async () => {
    await browser?.close();
    await receiver?.close();
    await srv?.stop();
    expect(problems, problems.join('\n')).to.deep.equal([]);
  });

  it('signs a self-registered merchant in: its organisation with token and snippet, no scrolling past the content', async () => {
    const body = registration({ domain: `${unique('bakery')}.example` });
    const r = await register(srv, body);
    expect(r.status, r.text).to.equal(200);
    const org = await srv.database.handle.db.selectFrom('organisations').select('id').where('domain', '=', body.domain).executeTakeFirstOrThrow();
    // some activity, so that the overview draws its chart (and its table for screen readers)
    for (let i = 0; i < 3; i++) {
      expect((await srv.api.post(`/jsv1/${org.id}/r-1/c-${i}/null/event/view`, { page: `https://${body.domain}/p/${i}` })).status).to.equal(202);
    }

    const page = await open();
    await page.goto(`${srv.url}/dashboard`);
    await page.getByLabel('a shop I registered myself').check();
    expect(await page.getByLabel('Platform name').count()).to.equal(0);
    await page.getByLabel('Email').fill(body.email);
    await page.getByLabel('Password').fill(body.password);
    await screenshot(page, 'merchant-sign-in');
    await page.getByRole('button', { name: 'Sign in' }).click();

    // straight to its one organisation
    await visible(page.getByRole('heading', { name: body.domain }));
    expect(new URL(page.url()).pathname).to.equal(`/dashboard/organisations/${org.id}`);
    const token = (await page.locator('#org-token').textContent())!.trim();
    const stored = await srv.database.handle.db.selectFrom('organisations').select('token_enc').where('id', '=', org.id).executeTakeFirstOrThrow();
    expect(token).to.equal(srv.deps.cipher.decrypt(stored.token_enc!));
    expect(await page.locator('#snippet').textContent()).to.equal(`<script async src="${srv.url}/jsv1/tracker.js" data-org-id="${org.id}"></script>`);
    expect(await page.locator('.crumbs').textContent()).to.include('Your organisation');
    await visible(page.locator('figure.chart svg'));
    // the page ends where its content ends (the chart's table for screen readers used to add ~600 px)
    const overflow = await page.evaluate(() => {
      const main = document.querySelector('main')!;
      return document.documentElement.scrollHeight - Math.max(window.innerHeight, main.getBoundingClientRect().bottom + window.scrollY);
    });
    expect(overflow, 'px the page scrolls past its content').to.be.at.most(2);
    await screenshot(page, 'merchant-organisation', true);

    // its integrations and visitors
    await page.getByRole('link', { name: 'Integrations' }).click();
    await visible(page.getByRole('heading', { name: 'Integrations' }));
    await page.getByRole('link', { name: 'Visitors' }).click();
    await visible(page.locator('table.rows'));
    expect(await page.locator('table.rows tbody tr').count()).to.equal(3);
    await page.close();
  });

  it('registers a merchant from the dashboard (platform account) and opens its organisation', async () => {
    const page = await open();
    await signInPlatform(page);
    await page.getByRole('button', { name: 'Register a merchant' }).click();
    const domain = `${unique('linen')}.example`;
    await page.getByLabel('Shop domain').fill(domain);
    await page.getByLabel('Organisation name').fill("Jane's Linen Shop");
    await page.getByLabel('Merchant email').fill(`${unique('jane')}@${domain}`);
    await page.getByLabel('Merchant name').fill('Jane Doe');
    await screenshot(page, 'merchant-register-form');
    await page.getByRole('button', { name: 'Register merchant' }).click();
    await visible(page.getByRole('heading', { name: domain }));
    expect((await page.locator('#org-token').textContent())!.trim()).to.match(/^\S{16,}$/);
    // and a second time: the domain is taken, said in the form
    await page.getByRole('link', { name: 'Organisations' }).click();
    await page.getByRole('button', { name: 'Register a merchant' }).click();
    await page.getByLabel('Shop domain').fill(domain);
    await page.getByLabel('Merchant email').fill(`${unique('other')}@example.com`);
    await page.getByRole('button', { name: 'Register merchant' }).click();
    await visible(page.getByRole('alert').filter({ hasText: 'Organisation Exists' }));
    await page.close();
  });

  it('shows a delivery’s payload, and says an unknown visitor is not found (no “Try again”)', async () => {
    const m = await newMerchant(srv, account, { domain: `${unique('s')}.example` });
    const o = m.organisation.id;
    await newWebhook(srv, account, o, { endpoint: receiver.url, do_events: true, do_contacts: true });
    expect((await srv.api.get(`/jsv1/identify/${o}/r-1/c-1/${b64url({ email: 'pay@example.com' })}`)).status).to.equal(200);
    await receiver.waitFor(receiver.requests.length + 1);

    const page = await open();
    await signInPlatform(page);
    await page.goto(`${srv.url}/dashboard/organisations/${o}/deliveries`);
    await page.getByRole('button', { name: 'Show payload' }).first().click();
    const payload = page.getByLabel(/^Payload of delivery/).first();
    await visible(payload);
    const shown = JSON.parse((await payload.textContent())!);
    expect(shown).to.include({ medium: 'matched', contact: 'pay@example.com', org_id: String(o) });
    expect(shown.visitor).to.deep.equal({ core_id: 'c-1', roaming_id: 'r-1', corex_id: null });
    await screenshot(page, 'merchant-delivery-payload', true);

    await page.goto(`${srv.url}/dashboard/organisations/${o}/visitors/no-such-visitor`);
    await visible(page.getByRole('heading', { name: 'Visitor not found' }));
    expect(await page.getByRole('button', { name: 'Try again' }).count()).to.equal(0);
    await page.getByRole('link', { name: 'all visitors' }).click();
    await visible(page.getByRole('heading', { name: 'Visitors' }));
    await page.goBack();
    await visible(page.getByRole('heading', { name: 'Visitor not found' }));
    await screenshot(page, 'merchant-visitor-not-found');
    await page.close();
  });

  it('says for how long a rate-limited sign-in must wait (Retry-After)', async () => {
    const page = await open();
    await page.goto(`${srv.url}/dashboard`);
    await page.getByLabel('Platform name').fill(account.platform);
    await page.getByLabel('Email').fill(account.email);
    for (let i = 0; i < 3; i++) {
      await page.getByLabel('Password').fill(`wrong password ${i}`);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await visible(page.getByRole('button', { name: 'Sign in' }));
      await page.getByRole('alert').waitFor();
    }
    const alert = page.getByRole('alert').filter({ hasText: 'Too many failed sign-ins' });
    await visible(alert);
    expect(await alert.textContent()).to.match(/Try again in (15 minutes|14 minutes)\./);
    await screenshot(page, 'merchant-sign-in-rate-limited');
    await page.close();
  });
});
