// The dashboard's Privacy page in Chromium against a real server with its
// privacy runner: an export by email, run and downloaded as a JSON file; an
// erase with `suppress` after a confirmation, its counts, the suppression
// list (which kind of identifier, when, which request; never who), the
// suppressed email identifying again without a contact; a refused phone; the
// customer taken off the list again; the privacy settings (Global Privacy
// Control, visitor retention). Photographed at desktop and phone width into
// test-artifacts/screenshots/dashboard-privacy-*.png.
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { type Account, newAccount, newMerchant, PASSWORD, unique } from '../support/accounts.ts';
import { launchChromium, screenshot } from '../support/browser.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { passesEventually } from '../support/wait.ts';
import { b64url } from '../support/payload.ts';
import type { OrgId } from '../support/org-id.ts';
import type { BodyOf } from '../support/client.ts';

const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };

describe('dashboard Privacy page in Chromium', function () {
  this.timeout(90_000);
  let browser: Browser;
  let srv: TestServer;
  let account: Account;
  let org: { id: OrgId; domain: string };
  const shopper = { email: `${unique('jane')}@example.com`, core: unique('c'), roaming: unique('r') };
  const problems: string[] = [];

  const base = () => `/v1/rest/${account.platform}/organisations/${org.id}`;
  const read = async () => (await srv.api.get<BodyOf<'getOrganisation'>>(base(), { token: account.token })).body;
  const visible = (l: Locator, timeout = 20_000) => l.waitFor({ state: 'visible', timeout });

  async function open(viewport: { width: number; height: number }): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport, deviceScaleFactor: 1, isMobile: viewport.width < 500, hasTouch: viewport.width < 500 });
    const page = await context.newPage();
    page.on('pageerror', (e) => problems.push(`page error: ${String(e)}`));
    page.on('console', (m) => {
      if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) problems.push(`console: ${m.text()}`);
    });
    page.on('request', (r) => {
      if (!r.url().startsWith(srv.url) && !r.url().startsWith('data:') && !r.url().startsWith('blob:')) {
        problems.push(`request leaving the server: ${r.url()}`);
      }
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

  /** The newest request's row, once it is a `type` request whose status badge says `status`. */
  async function newest(page: Page, type: string, status: string): Promise<Locator> {
    const row = page.getByRole('table', { name: 'Privacy requests, newest first' }).locator('tbody tr').first();
    await visible(row.filter({ hasText: type }).locator('.badge', { hasText: status }));
    return row;
  }

  async function request(page: Page, type: string, by: string, value: string, suppress = false) {
    await page.getByRole('radio', { name: type, exact: true }).check();
    await page.getByRole('radio', { name: by, exact: true }).check();
    await page.getByLabel(`The customer's ${by.replace('Email', 'email').replace('Phone', 'phone').replace('Visitor', 'visitor')}`).fill(value);
    if (suppress) await page.getByLabel('Also stop tracking this customer (suppress)').check();
  }

  before(async function () {
    browser = await launchChromium(this);
    srv = await startTestServer({}, { dispatcher: true, privacy: { sweepMs: 100 } });
    account = await newAccount(srv);
    org = (await newMerchant(srv, account, { domain: `${unique('privacy')}.shop.example` })).organisation;
    // a customer of the shop: identified, then browsing
    const id = await srv.api.get(`/jsv1/identify/${org.id}/${shopper.roaming}/${shopper.core}/${b64url({ email: shopper.email, name: 'Jane Doe' })}`);
    expect(id.status, id.text).to.equal(200);
    for (const n of [1, 2]) {
      const r = await srv.api.post(`/jsv1/${org.id}/${shopper.roaming}/${shopper.core}/null/event/productview`, {
        product_id: n,
        price: 9.5,
        product_url: `https://${org.domain}/p/${n}`,
      });
      expect(r.status, r.text).to.equal(202);
    }
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

    it('opens the Privacy tab with nothing requested and nobody suppressed', async () => {
      await page.goto(`${srv.url}/dashboard/organisations/${org.id}`);
      await page.getByRole('navigation', { name: 'Organisation' }).getByRole('link', { name: 'Privacy' }).click();
      await visible(page.getByRole('heading', { name: 'Privacy', exact: true }));
      expect(page.url()).to.equal(`${srv.url}/dashboard/organisations/${org.id}/privacy`);
      await visible(page.getByText('No privacy requests yet.'));
      await visible(page.getByText('Nobody is suppressed.'));
      expect(await page.getByLabel('Honour Global Privacy Control').isChecked()).to.equal(true);
      expect(await page.getByLabel('Erase visitors not seen for (days)').inputValue()).to.equal('');
      await fitsWidth(page, DESKTOP.width, 'privacy');
      await screenshot(page, 'dashboard-privacy-empty-desktop', true);
    });

    it('exports a customer by email, follows the request to done and downloads the document', async () => {
      await request(page, 'Export', 'Email', `  ${shopper.email.toUpperCase()} `);
      await page.getByRole('button', { name: 'Export the customer' }).click();
      await visible(page.getByText('export queued.', { exact: false }));
      const row = await newest(page, 'Export', 'done');
      expect(await row.textContent()).to.include('holds 1 person, 1 visitor, 1 contact, 2 events, 0 notifications');
      const [download] = await Promise.all([
        page.waitForEvent('download'),
        row.getByRole('button', { name: /Download the export of request/ }).click(),
      ]);
      expect(download.suggestedFilename()).to.match(new RegExp(`^trackway-export-${org.id}-\\d+\\.json$`));
      const doc = JSON.parse(readFileSync(await download.path(), 'utf8'));
      expect(doc).to.include({ org_id: org.id, subject_type: 'email', found: true });
      expect(doc.contacts.map((c: { value: string }) => c.value)).to.deep.equal([shopper.email]);
      expect(doc.visitors.map((v: { core_id: string; name: string }) => [v.core_id, v.name])).to.deep.equal([[shopper.core, 'Jane Doe']]);
      expect(doc.events).to.have.length(2);
      await screenshot(page, 'dashboard-privacy-export-desktop', true);
    });

    it('refuses a phone the API does not take, with its message', async () => {
      await request(page, 'Export', 'Phone', 'call me maybe');
      await page.getByRole('button', { name: 'Export the customer' }).click();
      const alert = page.getByRole('alert');
      await visible(alert);
      // the API reports on each shape of the subject; the page says what was wrong with the one it sent
      expect(await alert.textContent()).to.match(/^The customer's phone: /);
      await screenshot(page, 'dashboard-privacy-error-desktop');
      expect((await srv.api.get<BodyOf<'listPrivacyRequests'>>(`${base()}/privacy-requests`, { token: account.token })).body.items).to.have.length(1);
    });

    it('erases the customer only after a confirmation, suppresses them, and lists the entry without saying who', async () => {
      await request(page, 'Erase', 'Email', shopper.email, true);
      await page.getByRole('button', { name: 'Erase the customer' }).click();
      const dialog = page.getByRole('alertdialog');
      await visible(dialog);
      expect(await dialog.textContent()).to.include(`Erase everything stored about the customer with email ${shopper.email}?`);
      await screenshot(page, 'dashboard-privacy-confirm-desktop', true);
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      expect(
        (await srv.api.get<BodyOf<'listPrivacyRequests'>>(`${base()}/privacy-requests`, { token: account.token })).body.items,
        'nothing sent',
      ).to.have.length(1);

      await page.getByRole('button', { name: 'Erase the customer' }).click();
      await page.getByRole('alertdialog').getByRole('button', { name: 'Yes, erase' }).click();
      await visible(page.getByText('erasure queued, and suppressed from now on.', { exact: false }));
      const row = await newest(page, 'Erase', 'done');
      expect(await row.textContent()).to.include('removed 1 person, 1 visitor, 1 contact, 2 events');
      expect(await row.textContent()).to.include('suppressed');
      const { items: requests } = (await srv.api.get<BodyOf<'listPrivacyRequests'>>(`${base()}/privacy-requests`, { token: account.token })).body;
      const suppressions = page.getByRole('table', { name: 'Suppression list, newest first' });
      await visible(suppressions);
      expect((await suppressions.locator('tbody tr').allTextContents()).map((t) => t.replace(/^.*?(email)/, '$1'))).to.deep.equal([
        `email#${requests[0]!.id}`,
      ]);
      expect(await page.locator('main').textContent(), 'the page never shows the email after the request').to.not.include(shopper.email);
      expect((await srv.api.get(`${base()}/visitors/${shopper.core}`, { token: account.token })).status).to.equal(404);

      // the suppressed customer identifies again: answered as usual, nothing linked
      const again = await srv.api.get(`/jsv1/identify/${org.id}/r2/${unique('c')}/${b64url({ email: shopper.email })}`);
      expect(again.status, again.text).to.equal(200);
      const contacts = await srv.deps.db.selectFrom('contacts').select('value').where('org_id', '=', org.id).execute();
      expect(contacts).to.deep.equal([]);
      await screenshot(page, 'dashboard-privacy-erased-desktop', true);
    });

    it('takes the customer off the suppression list', async () => {
      await request(page, 'Stop suppressing', 'Email', shopper.email);
      expect(await page.getByLabel('Also stop tracking this customer (suppress)').count()).to.equal(0);
      await page.getByRole('button', { name: 'Take off the suppression list' }).click();
      await visible(page.getByText('taken off the suppression list.', { exact: false }));
      await visible(page.getByText('Nobody is suppressed.'));
      await newest(page, 'Stop suppressing', 'done');
      expect(
        (await srv.api.get<BodyOf<'listPrivacySuppressions'>>(`${base()}/privacy-suppressions`, { token: account.token })).body.items,
      ).to.deep.equal([]);
    });

    it('saves the privacy settings, and shows what the API refuses', async () => {
      await page.getByLabel('Erase visitors not seen for (days)').fill('thirty');
      await page.getByRole('button', { name: 'Save privacy settings' }).click();
      await visible(page.getByText('Retention: a whole number of days', { exact: false }));
      await page.getByLabel('Erase visitors not seen for (days)').fill('0');
      await page.getByRole('button', { name: 'Save privacy settings' }).click();
      await visible(page.getByText('visitor_retention_days', { exact: false }));
      expect((await read()).visitor_retention_days, 'nothing saved').to.equal(null);

      await page.getByLabel('Honour Global Privacy Control').uncheck();
      await page.getByLabel('Erase visitors not seen for (days)').fill('30');
      await page.getByRole('button', { name: 'Save privacy settings' }).click();
      await visible(page.getByText('Privacy settings saved.'));
      expect(await read()).to.include({ honor_gpc: false, visitor_retention_days: 30 });
      await page.getByLabel('Honour Global Privacy Control').check();
      await page.getByLabel('Erase visitors not seen for (days)').fill('');
      await page.getByRole('button', { name: 'Save privacy settings' }).click();
      // the same message as before: wait for what was saved
      await passesEventually(async () => expect(await read()).to.include({ honor_gpc: true, visitor_retention_days: null }));
      await visible(page.getByText('Privacy settings saved.'));
    });
  });

  describe('at phone width', () => {
    it('fits the Privacy page at 390 px and photographs it', async () => {
      const { context, page } = await open(PHONE);
      try {
        await page.goto(`${srv.url}/dashboard/organisations/${org.id}/privacy`);
        await visible(page.getByRole('heading', { name: 'Privacy', exact: true }));
        await page.waitForFunction(() => !document.querySelector('.spinner'));
        await fitsWidth(page, PHONE.width, 'privacy');
        await screenshot(page, 'dashboard-privacy-phone', true);
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
