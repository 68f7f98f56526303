// The dashboard's trust settings page in Chromium against a real server:
// identity verification, allowed domains (with the API's per-line problems),
// enforce origin, keeping bots out (filter_bots), reset to the default, the
// identity secret shown, copied and rotated after a confirmation, and the
// Node.js snippet copied from the page run for real: the hash it prints is
// accepted by the server under `required`. Photographed at desktop and phone
// width into test-artifacts/screenshots/dashboard-settings-*.png.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { type Account, newAccount, newMerchant, PASSWORD, unique } from '../support/accounts.ts';
import { launchChromium, screenshot } from '../support/browser.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { b64url } from '../support/payload.ts';
import type { BodyOf } from '../support/client.ts';

const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };

describe('dashboard trust settings in Chromium', function () {
  this.timeout(60_000);
  let browser: Browser;
  let srv: TestServer;
  let account: Account;
  let org: { id: number; domain: string };
  const problems: string[] = [];

  const read = async () =>
    (await srv.api.get<BodyOf<'getOrganisation'>>(`/v1/rest/${account.platform}/organisations/${org.id}`, { token: account.token })).body;
  const visible = (l: Locator, timeout = 10_000) => l.waitFor({ state: 'visible', timeout });

  async function open(viewport: { width: number; height: number }): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport, deviceScaleFactor: 1, isMobile: viewport.width < 500, hasTouch: viewport.width < 500 });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: srv.url });
    const page = await context.newPage();
    page.on('pageerror', (e) => problems.push(`page error: ${String(e)}`));
    page.on('console', (m) => {
      if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) problems.push(`console: ${m.text()}`);
    });
    page.on('request', (r) => {
      if (!r.url().startsWith(srv.url) && !r.url().startsWith('data:')) problems.push(`request leaving the server: ${r.url()}`);
    });
    await page.goto(`${srv.url}/dashboard`);
    await page.getByLabel('Platform name').fill(account.platform);
    await page.getByLabel('Email').fill(account.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await visible(page.getByRole('heading', { name: 'Organisations' }));
    return { context, page };
  }

  async function fitsWidth(page: Page, width: number, what: string) {
    const scroll = await page.evaluate(() => document.documentElement.scrollWidth);
    expect(scroll, `${what}: page width in px`).to.be.at.most(width);
  }

  before(async function () {
    browser = await launchChromium(this);
    srv = await startTestServer();
    account = await newAccount(srv);
    org = (await newMerchant(srv, account, { domain: `${unique('trust')}.shop.example` })).organisation;
  });
  after(async () => {
    await browser?.close();
    await srv?.stop();
  });

  describe('at desktop width', () => {
    let context: BrowserContext;
    let page: Page;
    before(async () => ({ context, page } = await open(DESKTOP)));
    after(() => context?.close());

    it('opens the Settings tab with the defaults, and shows and copies the identity secret', async () => {
      await page.goto(`${srv.url}/dashboard/organisations/${org.id}`);
      await page.getByRole('navigation', { name: 'Organisation' }).getByRole('link', { name: 'Settings' }).click();
      await visible(page.getByRole('heading', { name: 'Trust settings' }));
      expect(page.url()).to.equal(`${srv.url}/dashboard/organisations/${org.id}/settings`);
      expect(await page.getByLabel('Optional').isChecked()).to.equal(true);
      expect(await page.getByLabel('Allowed domains, one per line').inputValue()).to.equal(org.domain);
      expect(await page.getByLabel('Refuse tracking requests from other sites (enforce origin)').isChecked()).to.equal(false);
      expect(await page.getByLabel('Export activity of unverified visitors').isChecked()).to.equal(true);
      expect(await page.getByLabel('Keep known bots out').isChecked()).to.equal(true);

      const { identity_secret: secret } = await read();
      expect(await page.locator('#identity-secret').textContent()).to.not.include(secret);
      await page.getByRole('button', { name: 'Show identity secret' }).click();
      expect(await page.locator('#identity-secret').textContent()).to.equal(secret);
      await page.getByRole('button', { name: 'Copy the identity secret' }).click();
      expect(await page.evaluate(() => navigator.clipboard.readText())).to.equal(secret);
      await page.getByRole('button', { name: 'Hide identity secret' }).click();
      await fitsWidth(page, DESKTOP.width, 'settings');
      await screenshot(page, 'dashboard-settings-desktop', true);
    });

    it('saves identity verification, allowed domains, enforce origin and keeping bots out, and shows the API’s problem per line', async () => {
      await page.getByLabel('Required').check();
      await page.getByLabel('Allowed domains, one per line').fill(`${org.domain}\nShop.Example.COM\nhttps://cdn.example.net:8080/x`);
      await page.getByLabel('Refuse tracking requests from other sites (enforce origin)').check();
      await page.getByLabel('Export activity of unverified visitors').uncheck();
      await page.getByLabel('Keep known bots out').uncheck();
      await page.getByRole('button', { name: 'Save settings' }).click();
      const alert = page.getByRole('alert');
      await visible(alert);
      expect(await alert.textContent()).to.include('Line 3 (https://cdn.example.net:8080/x)');
      await screenshot(page, 'dashboard-settings-error-desktop', true);
      expect((await read()).identity_verification, 'nothing saved').to.equal('optional');

      await page.getByLabel('Allowed domains, one per line').fill(`${org.domain}\nShop.Example.COM\ncdn.example.net`);
      await page.getByRole('button', { name: 'Save settings' }).click();
      await visible(page.getByText('Settings saved.'));
      const saved = await read();
      expect(saved).to.include({ identity_verification: 'required', enforce_origin: true, export_unverified: false, filter_bots: false });
      expect(await page.getByLabel('Export activity of unverified visitors').isChecked()).to.equal(false);
      expect(await page.getByLabel('Keep known bots out').isChecked()).to.equal(false);
      expect(saved.allowed_domains).to.deep.equal([org.domain, 'shop.example.com', 'cdn.example.net']);
      expect(await page.getByLabel('Allowed domains, one per line').inputValue()).to.equal(saved.allowed_domains.join('\n'));

      await page.getByRole('button', { name: 'Reset domains to default' }).click();
      await visible(page.getByText('Allowed domains reset to the default.'));
      expect((await read()).allowed_domains).to.deep.equal([org.domain]);
      expect(await page.getByLabel('Allowed domains, one per line').inputValue()).to.equal(org.domain);
    });

    it('gives a Node.js snippet whose hash the server accepts, and the tracker call', async () => {
      await page.getByRole('button', { name: 'Copy the Node.js code' }).click();
      const code = await page.evaluate(() => navigator.clipboard.readText());
      expect(code).to.include("createHmac('sha256', secret)");
      await page.getByRole('button', { name: 'Copy the tracker call' }).click();
      expect(await page.evaluate(() => navigator.clipboard.readText())).to.include(
        "trackway.push(['identify', { email: CUSTOMER_EMAIL, hash: HASH_FROM_YOUR_SERVER }])",
      );
      expect(await page.locator('#snippet-php').textContent()).to.include("hash_hmac('sha256', mb_strtolower(trim($email)), $secret)");

      // run the copied code as the shop's server would
      const dir = mkdtempSync(path.join(os.tmpdir(), 'trackway-snippet-'));
      try {
        const file = path.join(dir, 'hash.mjs');
        writeFileSync(file, `${code}\nconsole.log(trackwayHash(process.argv[2]));\n`);
        const { identity_secret: secret } = await read();
        const { stdout } = await promisify(execFile)(process.execPath, [file, ' Customer@Example.com '], {
          env: { ...process.env, TRACKWAY_IDENTITY_SECRET: secret },
        });
        const hash = stdout.trim();
        expect(hash).to.match(/^[0-9a-f]{64}$/);
        const ok = await srv.api.get(`/jsv1/identify/${org.id}/r1/c-snippet/${b64url({ email: ' Customer@Example.com ', hash })}`, {
          headers: { origin: `https://${org.domain}` },
        });
        expect(ok.status, ok.text).to.equal(200);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('rotates the secret only after a confirmation, and shows the new one', async () => {
      const before = (await read()).identity_secret;
      await page.getByRole('button', { name: 'Rotate secret' }).click();
      const dialog = page.getByRole('alertdialog');
      await visible(dialog);
      expect(await dialog.textContent()).to.include('identify calls are refused until your server uses the new secret');
      await screenshot(page, 'dashboard-settings-rotate-desktop', true);
      await dialog.getByRole('button', { name: 'Keep the current secret' }).click();
      expect((await read()).identity_secret).to.equal(before);

      await page.getByRole('button', { name: 'Rotate secret' }).click();
      await page.getByRole('alertdialog').getByRole('button', { name: 'Yes, rotate' }).click();
      await visible(page.getByText('Identity secret rotated.', { exact: false }));
      const after = (await read()).identity_secret;
      expect(after).to.not.equal(before);
      expect(await page.locator('#identity-secret').textContent()).to.equal(after);
    });
  });

  describe('at phone width', () => {
    it('fits the settings page at 390 px and photographs it', async () => {
      const { context, page } = await open(PHONE);
      try {
        await page.goto(`${srv.url}/dashboard/organisations/${org.id}/settings`);
        await visible(page.getByRole('heading', { name: 'Trust settings' }));
        await page.waitForFunction(() => !document.querySelector('.spinner'));
        await fitsWidth(page, PHONE.width, 'settings');
        await screenshot(page, 'dashboard-settings-phone', true);
      } finally {
        await context.close();
      }
    });
  });

  describe('throughout', () => {
    it('met no page error, CSP violation or request leaving the server', () => {
      expect(problems).to.deep.equal([]);
    });
  });
});
