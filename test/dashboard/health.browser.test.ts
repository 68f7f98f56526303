// Endpoint health in the dashboard, in Chromium: integrations that are
// failing, paused by the circuit breaker (until when, why) and disabled by
// Trackway (the reason) are shown as such on the integrations page, and the
// deliveries page says which endpoints are not receiving and which pending
// deliveries wait for one; activating a disabled integration clears it.
// Photographed at desktop and phone width into
// test-artifacts/screenshots/dashboard-health-*.png.
import { expect } from 'chai';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { type Account, newAccount, newMerchant, newWebhook, PASSWORD } from '../support/accounts.ts';
import { launchChromium, screenshot } from '../support/browser.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { TestReceiver } from '../support/receiver.ts';
import { enqueue, eventually, matchedBody } from '../support/webhook-fixtures.ts';
import type { OrgId } from '../../src/db/tenancy.ts';
import type { BodyOf } from '../support/client.ts';

const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };

describe('endpoint health in the dashboard (Chromium)', function () {
  // generous bounds, not timings: on a loaded machine or a Citus cluster the states take tens of seconds
  this.timeout(180_000);
  let browser: Browser;
  let srv: TestServer;
  let account: Account;
  let orgId: OrgId;
  const receivers: Record<'paused' | 'disabled' | 'failing' | 'healthy', TestReceiver> = {} as never;
  const hooks: Record<string, { id: number; orgId: OrgId; signingSecret: string }> = {};
  const problems: string[] = [];

  async function open(viewport: { width: number; height: number }): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport, deviceScaleFactor: 1, isMobile: viewport.width < 500, hasTouch: viewport.width < 500 });
    const page = await context.newPage();
    page.on('pageerror', (e) => problems.push(`page error: ${String(e)}`));
    page.on('console', (m) => {
      if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) problems.push(`console: ${m.text()}`);
    });
    await page.goto(`${srv.url}/dashboard`);
    await page.getByLabel('Platform name').fill(account.platform);
    await page.getByLabel('Email').fill(account.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Organisations' }).waitFor();
    return { context, page };
  }

  const visible = (l: Locator, timeout = 10_000) => l.waitFor({ state: 'visible', timeout });
  const card = (page: Page, r: TestReceiver) => page.getByRole('listitem', { name: `Integration ${r.url}` });

  async function fitsWidth(page: Page, width: number, what: string) {
    const scroll = await page.evaluate(() => document.documentElement.scrollWidth);
    expect(scroll, `${what}: page width in px`).to.be.at.most(width);
  }

  async function health(id: number) {
    return (await srv.api.get<BodyOf<'getIntegration'>>(`/v1/rest/${account.platform}/integration/${id}`, { token: account.token })).body.health;
  }

  before(async function () {
    browser = await launchChromium(this);
    // a long pause (it stays paused while photographed); disabled after failing for 1 s; retries every 400 ms
    srv = await startTestServer(
      {
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOK_RETRY_SCHEDULE: Array.from({ length: 20 }, () => '400ms').join(','),
        WEBHOOK_DISABLE_AFTER: '1s',
      },
      { dispatcher: true, dispatcherOptions: { breaker: { threshold: 5, cooldownMs: 120_000, maxCooldownMs: 120_000 } } },
    );
    account = await newAccount(srv);
    orgId = (await newMerchant(srv, account, { organisation_name: 'Health Shop' })).organisation.id;
    receivers.paused = await TestReceiver.start(() => ({ status: 503, body: 'maintenance' }));
    receivers.disabled = await TestReceiver.start(() => ({ status: 500, body: 'broken' }));
    receivers.failing = await TestReceiver.start(() => ({ status: 410, body: 'gone' }));
    receivers.healthy = await TestReceiver.start(() => ({ status: 204 }));
    for (const [name, r] of Object.entries(receivers)) {
      const i = await newWebhook(srv, account, orgId, { endpoint: r.url, do_events: false, do_contacts: true });
      hooks[name] = { id: i.id, orgId, signingSecret: i.signing_secret };
    }
    const bodies = (n: number, tag: string) =>
      Array.from({ length: n }, (_, k) => ({ kind: 'matched' as const, body: matchedBody(orgId, `${tag}${k}@example.com`) }));
    // eight failures at once: paused at once; one delivery failing every 400 ms: disabled after 1 s
    await enqueue(srv.deps.db, hooks.paused!, bodies(8, 'p'));
    await enqueue(srv.deps.db, hooks.disabled!, bodies(1, 'd'));
    await enqueue(srv.deps.db, hooks.failing!, bodies(1, 'f'));
    await enqueue(srv.deps.db, hooks.healthy!, bodies(1, 'h'));
    await eventually(
      async () => {
        const states = await Promise.all(['paused', 'disabled', 'failing', 'healthy'].map(async (n) => (await health(hooks[n]!.id)).state));
        return states.join() === 'paused,disabled,failing,healthy' ? true : undefined;
      },
      90_000,
      'the four endpoint states',
    );
  });
  after(async () => {
    await browser?.close();
    await Promise.all(Object.values(receivers).map((r) => r.close()));
    await srv?.stop();
  });

  it('shows paused (until when, why), disabled (the reason) and failing endpoints on the integrations page, at desktop and phone width', async () => {
    for (const [viewport, name] of [
      [DESKTOP, 'desktop'],
      [PHONE, 'phone'],
    ] as const) {
      const { context, page } = await open(viewport);
      try {
        await page.goto(`${srv.url}/dashboard/organisations/${orgId}/integrations`);
        const paused = card(page, receivers.paused);
        await visible(paused.getByText(/^Paused until/));
        const pausedText = (await paused.textContent())!;
        expect(pausedText).to.include('Paused').and.include('Active').and.include('after 8 failed attempts in a row');
        expect(pausedText).to.include('Last error: HTTP 503').and.include('Deliveries wait and are not lost');

        const disabled = card(page, receivers.disabled);
        await visible(disabled.getByText(/^Disabled by Trackway on /));
        const disabledText = (await disabled.textContent())!;
        expect(disabledText).to.include('Disabled automatically: no delivery succeeded for 1 second').and.include('last error: HTTP 500');
        expect(disabledText).to.not.include('Inactive');
        expect(await disabled.getByRole('button', { name: 'Activate' }).count()).to.equal(1);

        const failing = card(page, receivers.failing);
        expect(await failing.textContent())
          .to.include('Failing')
          .and.include('The last attempt failed')
          .and.include('Last error: HTTP 410');
        const healthy = card(page, receivers.healthy);
        expect(await healthy.locator('.health').count()).to.equal(0);
        expect(await healthy.textContent()).to.include('Active');

        await fitsWidth(page, viewport.width, `integrations (${name})`);
        await screenshot(page, `dashboard-health-integrations-${name}`, true);

        await page.getByRole('navigation', { name: 'Organisation' }).getByRole('link', { name: 'Deliveries' }).click();
        const banner = page.getByRole('region', { name: 'Endpoints not receiving deliveries' });
        await visible(banner);
        const bannerText = (await banner.textContent())!;
        expect(bannerText).to.include(receivers.paused.url).and.include('Paused until');
        expect(bannerText).to.include(receivers.disabled.url).and.include('Disabled by Trackway');
        expect(bannerText).to.not.include(receivers.failing.url);
        await page.getByRole('button', { name: 'Pending', exact: true }).click();
        const waiting = page.getByRole('listitem').filter({ hasText: 'its endpoint is paused' });
        await visible(waiting.first());
        expect(await waiting.count()).to.equal(8);
        await fitsWidth(page, viewport.width, `deliveries (${name})`);
        await screenshot(page, `dashboard-health-deliveries-${name}`, true);
      } finally {
        await context.close();
      }
    }
  });

  it('clears a disabled integration when it is activated from its card', async () => {
    const { context, page } = await open(DESKTOP);
    try {
      receivers.disabled.respond(() => ({ status: 204 }));
      await page.goto(`${srv.url}/dashboard/organisations/${orgId}/integrations`);
      const disabled = card(page, receivers.disabled);
      await disabled.getByRole('button', { name: 'Activate' }).click();
      await visible(disabled.getByRole('button', { name: 'Deactivate' }));
      expect(await disabled.locator('.health').count()).to.equal(0);
      expect(await disabled.textContent())
        .to.include('Active')
        .and.not.include('Disabled');
      expect(await health(hooks.disabled!.id)).to.include({ state: 'healthy', disabled_reason: null });
    } finally {
      await context.close();
    }
  });

  it('met no page error', () => {
    expect(problems).to.deep.equal([]);
  });
});
