// The dashboard's Change password page in Chromium against a real server
// (issue 22, point 4): a platform account and a self-registered merchant
// change their password from the header's link; a wrong current password
// says so without signing the user out; a session stolen earlier (a token
// got through the API) stops working, while this tab stays signed in; the
// new password signs in. Photographed into
// test-artifacts/screenshots/dashboard-password-*.png.
import { expect } from 'chai';
import type { Browser, Locator, Page } from 'playwright-core';
import { REGISTRATION_TOKEN, register, registration } from '../support/registration.ts';
import { type Account, newAccount, PASSWORD, uniqueIp } from '../support/accounts.ts';
import { launchChromium, screenshot } from '../support/browser.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import type { BodyOf } from '../support/client.ts';

const DESKTOP = { width: 1280, height: 800 };

describe('dashboard in Chromium: change password (issue 22, point 4)', function () {
  this.timeout(60_000);
  let browser: Browser;
  let srv: TestServer;
  let account: Account;
  const problems: string[] = [];

  async function open(): Promise<Page> {
    const context = await browser.newContext({ viewport: DESKTOP, deviceScaleFactor: 1 });
    const page = await context.newPage();
    page.on('pageerror', (e) => problems.push(`page error: ${String(e)}`));
    page.on('console', (m) => {
      if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) problems.push(`console: ${m.text()}`);
    });
    page.on('request', (r) => {
      if (!r.url().startsWith(srv.url) && !r.url().startsWith('data:')) problems.push(`request leaving the server: ${r.url()}`);
    });
    return page;
  }
  const visible = (l: Locator, timeout = 10_000) => l.waitFor({ state: 'visible', timeout });
  const login = (platform: string, email: string, password: string) =>
    srv.api.post<BodyOf<'loginPlatformUser'>>(
      `/v1/rest/${platform}/users/login`,
      { email, password },
      { headers: { 'x-forwarded-for': uniqueIp() } },
    );

  async function changeFromHeader(page: Page, current: string, next: string, repeat = next) {
    await page.getByRole('link', { name: 'Change password' }).click();
    await visible(page.getByRole('heading', { name: 'Change password', level: 1 }));
    await page.getByLabel('Current password').fill(current);
    await page.getByLabel('New password', { exact: true }).fill(next);
    await page.getByLabel('New password again').fill(repeat);
    await page.getByRole('button', { name: 'Change password' }).click();
  }

  before(async function () {
    browser = await launchChromium(this);
    srv = await startTestServer({ REGISTRATION_TOKEN, TRUST_PROXY: 'true' });
    account = await newAccount(srv);
  });
  after(async () => {
    await browser?.close();
    await srv?.stop();
  });

  it('lets a platform account change its password: a wrong one is said, a stolen session ends, this tab stays signed in', async () => {
    const stolen = (await login('acme', account.email, PASSWORD)).body.bearer_token;
    const page = await open();
    await page.goto(`${srv.url}/dashboard`);
    await page.getByLabel('Platform name').fill(account.platform);
    await page.getByLabel('Email').fill(account.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await visible(page.getByRole('heading', { name: 'Organisations' }));

    // the repetition must match (checked before anything is sent)
    await changeFromHeader(page, PASSWORD, 'a longer passphrase 2026', 'a longer passphrase 2025');
    expect(await page.getByRole('alert').textContent()).to.equal('The new password and its repetition differ.');
    // a wrong current password: said on the page, and the user is still signed in
    await changeFromHeader(page, 'not my password', 'a longer passphrase 2026');
    await visible(page.getByRole('alert').getByText('The current password is wrong.'));
    expect(page.url()).to.equal(`${srv.url}/dashboard/password`);
    await screenshot(page, 'dashboard-password-wrong-desktop', true);

    await changeFromHeader(page, PASSWORD, 'a longer passphrase 2026');
    await visible(page.getByRole('status').getByText('Password changed.'));
    await screenshot(page, 'dashboard-password-changed-desktop', true);
    expect((await srv.api.get('/v1/rest/acme/organisations', { token: stolen })).status, 'the stolen session ends').to.equal(401);
    // this tab goes on with the new token
    await page.getByRole('link', { name: 'Trackway' }).click();
    await visible(page.getByRole('heading', { name: 'Organisations' }));
    expect(await page.getByText('Your session has expired').count()).to.equal(0);

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await visible(page.getByRole('alert'));
    await page.getByLabel('Password').fill('a longer passphrase 2026');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await visible(page.getByRole('heading', { name: 'Organisations' }));
    await page.close();
  });

  it('lets a self-registered merchant change its password, which ends its other sessions', async () => {
    const body = registration();
    expect((await register(srv, body)).status).to.equal(200);
    const stolen = (await login('merchant', body.email, body.password)).body.bearer_token;
    const page = await open();
    await page.goto(`${srv.url}/dashboard`);
    await page.getByLabel('a shop I registered myself').check();
    await page.getByLabel('Email').fill(body.email);
    await page.getByLabel('Password').fill(body.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await visible(page.getByRole('link', { name: 'Change password' }));

    await changeFromHeader(page, body.password, 'bread at dawn, 2026');
    await visible(page.getByRole('status').getByText('Password changed.'));
    expect((await srv.api.get('/v1/rest/merchant/organisations', { token: stolen })).status).to.equal(401);
    expect((await login('merchant', body.email, 'bread at dawn, 2026')).status).to.equal(200);
    await page.close();
  });

  it('met no page error, CSP violation or request leaving the server', () => {
    expect(problems, problems.join('\n')).to.deep.equal([]);
  });
});
