// The Events page and a visitor's timeline in Chromium (issue 23, point 6),
// against a real server, database and dispatcher: a platform user and a
// self-registered merchant each see their organisation's events, newest
// first, and never another's; filters by event name and by visitor; cursor
// paging; a visitor's timeline and its link to the filtered Events page;
// hostile bodies rendered inert; and the integration form's defaults (both
// contact matches and event exports, as the README's API example). Pages are
// photographed at desktop and phone width into
// test-artifacts/screenshots/events-*.png.
import { expect } from 'chai';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { register, REGISTRATION_TOKEN, registration } from '../support/registration.ts';
import { type Account, type Merchant, newAccount, newMerchant, PASSWORD, unique } from '../support/accounts.ts';
import { launchChromium, screenshot } from '../support/browser.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { TestReceiver } from '../support/receiver.ts';
import { b64url } from '../support/payload.ts';
import type { BodyOf } from '../support/client.ts';

const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };

// what a shop's page (or anyone who knows the organisation's id) can put in a body
const HOSTILE_MARKUP = '<img src=x onerror="document.title=\'pwned\'">';
const HOSTILE_SCRIPT = '<script>document.title="pwned"</script>';
const HOSTILE_URL = 'javascript:document.title="pwned"';
const HOSTILE_DATA_URL = 'data:text/html,<script>alert(1)</script>';

describe('dashboard in Chromium: the Events page and a visitor’s timeline (issue 23)', function () {
  this.timeout(90_000);
  let browser: Browser;
  let srv: TestServer;
  let acme: Account;
  let globex: Account;
  let shop: Merchant['organisation'];
  let other: Merchant['organisation'];
  let receiver: TestReceiver;
  const merchant = registration();
  let merchantOrg: number;
  const pager = unique('cp'); // a visitor with 30 page views (two pages)
  const shopper = unique('cs'); // a visitor with one event of each kind, and the hostile bodies
  const problems: string[] = [];

  async function track(orgId: number, core: string, name: string, body: Record<string, unknown>) {
    const r = await srv.api.post(`/jsv1/${orgId}/r-${core}/${core}/null/event/${name}`, body);
    expect(r.status, r.text).to.equal(202);
  }

  async function open(viewport: { width: number; height: number }): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport, deviceScaleFactor: 1, isMobile: viewport.width < 500, hasTouch: viewport.width < 500 });
    const page = await context.newPage();
    page.on('pageerror', (e) => problems.push(`page error: ${String(e)}`));
    page.on('console', (m) => {
      if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) problems.push(`console: ${m.text()}`);
    });
    page.on('dialog', (d) => problems.push(`dialog: ${d.message()}`));
    page.on('request', (r) => {
      if (!r.url().startsWith(srv.url) && !r.url().startsWith('data:')) problems.push(`request leaving the server: ${r.url()}`);
    });
    return { context, page };
  }
  const visible = (l: Locator, timeout = 10_000) => l.waitFor({ state: 'visible', timeout });
  const rows = (page: Page) => page.locator('table.events tbody tr');
  const rowCount = (page: Page, n: number) => page.waitForFunction((n) => document.querySelectorAll('table.events tbody tr').length === n, n);
  const pickEvent = (page: Page, name: string) => page.getByLabel('Event', { exact: true }).selectOption(name);
  const names = (page: Page) => page.locator('table.events td.event-name code').allTextContents();
  async function fitsWidth(page: Page, width: number, what: string) {
    const scroll = await page.evaluate(() => document.documentElement.scrollWidth);
    expect(scroll, `${what}: page width in px`).to.be.at.most(width);
  }

  async function signIn(page: Page, account: Account) {
    await page.goto(`${srv.url}/dashboard`);
    await page.getByLabel('Platform name').fill(account.platform);
    await page.getByLabel('Email').fill(account.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await visible(page.getByRole('heading', { name: 'Organisations' }));
  }

  before(async function () {
    browser = await launchChromium(this);
    srv = await startTestServer({ REGISTRATION_TOKEN, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' }, { dispatcher: true });
    acme = await newAccount(srv, 'acme');
    globex = await newAccount(srv, 'globex');
    receiver = await TestReceiver.start(() => ({ status: 204 }));
    shop = (await newMerchant(srv, acme, { domain: `${unique('linen')}.example`, organisation_name: "Jane's Linen Shop" })).organisation;
    other = (await newMerchant(srv, globex, { domain: `${unique('rival')}.example` })).organisation;
    const r = await register(srv, merchant);
    expect(r.status, r.text).to.equal(200);
    merchantOrg = (
      await srv.database.handle.db.selectFrom('organisations').select('id').where('domain', '=', merchant.domain).executeTakeFirstOrThrow()
    ).id;

    const at = (path: string) => `https://${shop.domain}${path}`;
    for (let i = 1; i <= 30; i++) await track(shop.id, pager, 'view', { page: at(`/p/${i}`) });
    await track(shop.id, shopper, 'productview', { product_id: 11, price: 59.9, product_url: at('/products/linen-shirt') });
    await track(shop.id, shopper, 'updatecart', {
      cart_url: at('/cart'),
      product_id: 11,
      cart_value: 119.8,
      line_items: [{ product_id: 11, quantity: 2, line_price: 119.8, title: HOSTILE_SCRIPT, image_url: at('/img/shirt.jpg') }],
    });
    await track(shop.id, shopper, 'categoryview', { category: HOSTILE_MARKUP });
    await track(shop.id, shopper, 'buy', { order_id: HOSTILE_URL, checkout_url: at('/thanks'), items: [{ product_id: 11, price: 59.9 }] });
    // The contract lets only http(s) URLs into URL fields, but the page must not trust that: an event
    // stored by an older version (or a future event kind) is read back as it is.
    await srv.database.handle.db
      .insertInto('events')
      .values({
        org_id: shop.id,
        received_at: new Date(),
        name: 'view',
        core_id: shopper,
        roaming_id: `r-${shopper}`,
        corex_id: null,
        body: JSON.stringify({ page: HOSTILE_URL, image: HOSTILE_DATA_URL, [HOSTILE_MARKUP]: 'a hostile key' }),
      })
      .execute();
    await track(other.id, 'rival-visitor', 'view', { page: `https://${other.domain}/secret-page` });
    await track(merchantOrg, 'baker-visitor', 'view', { page: `https://${merchant.domain}/bread` });
    await track(merchantOrg, 'baker-visitor', 'productview', { product_id: 7, product_url: `https://${merchant.domain}/products/rye` });
  });
  after(async () => {
    await browser?.close();
    await receiver?.close();
    await srv?.stop();
  });

  describe('at desktop width, as a platform user', () => {
    let context: BrowserContext;
    let page: Page;
    before(async () => {
      ({ context, page } = await open(DESKTOP));
      await signIn(page, acme);
    });
    after(() => context?.close());

    it('lists the organisation’s events newest first, 25 a page, and pages with the cursor', async () => {
      await page.getByRole('link', { name: shop.domain }).click();
      await page.getByRole('navigation', { name: 'Organisation' }).getByRole('link', { name: 'Events' }).click();
      await visible(page.getByRole('heading', { name: 'Events' }));
      expect(new URL(page.url()).pathname).to.equal(`/dashboard/organisations/${shop.id}/events`);
      await rowCount(page, 25);
      // the stored view, buy, categoryview, updatecart, productview, then the page views from /p/30 down
      expect(await names(page)).to.deep.equal(['view', 'buy', 'categoryview', 'updatecart', 'productview', ...Array<string>(20).fill('view')]);
      const sixth = rows(page).nth(5);
      expect(await sixth.locator('td.event-name').textContent()).to.equal('Page view view');
      expect(await sixth.locator('td.details').textContent()).to.equal(`Pagehttps://${shop.domain}/p/30`);
      await visible(sixth.getByRole('link', { name: `https://${shop.domain}/p/30` }));
      expect(await sixth.locator('td.time time').getAttribute('datetime')).to.match(/^\d{4}-\d\d-\d\dT/);
      // the visitor, as a link to its page
      expect(await sixth.getByRole('link', { name: pager }).getAttribute('href')).to.equal(`/dashboard/organisations/${shop.id}/visitors/${pager}`);
      expect(await page.locator('main').textContent()).to.not.include('secret-page');
      await fitsWidth(page, DESKTOP.width, 'events');
      await screenshot(page, 'events-desktop', true);

      await page.getByRole('button', { name: 'Next' }).click();
      await visible(page.getByText('Page 2', { exact: true }));
      await rowCount(page, 10);
      expect(await rows(page).last().locator('td.details').textContent()).to.equal(`Pagehttps://${shop.domain}/p/1`);
      expect(await page.getByRole('button', { name: 'Next' }).isDisabled()).to.equal(true);
      await page.getByRole('button', { name: 'Previous' }).click();
      await rowCount(page, 25);
      expect(await rows(page).first().locator('td.event-name code').textContent()).to.equal('view');
    });

    it('filters by event name and by visitor, alone and together', async () => {
      await pickEvent(page, 'productview');
      await rowCount(page, 1);
      expect(new URL(page.url()).searchParams.get('name')).to.equal('productview');
      expect(await rows(page).first().textContent())
        .to.include('Product view')
        .and.include(`https://${shop.domain}/products/linen-shirt`)
        .and.include('59.9');
      await pickEvent(page, 'buy');
      await rowCount(page, 1);
      expect(await names(page)).to.deep.equal(['buy']);
      await pickEvent(page, 'view');
      await rowCount(page, 25);
      await page.getByRole('button', { name: 'Next' }).click();
      await rowCount(page, 6); // 31 page views in all

      // one visitor: the name filter stays, the paging starts over
      await page.getByLabel('Visitor ID').fill(shopper);
      await page.getByRole('button', { name: 'Filter' }).click();
      await rowCount(page, 1);
      const url = new URL(page.url());
      expect([url.searchParams.get('name'), url.searchParams.get('visitor')]).to.deep.equal(['view', shopper]);
      expect(await page.getByRole('button', { name: 'Previous' }).count()).to.equal(0);
      await pickEvent(page, '');
      await rowCount(page, 5);
      expect(await names(page)).to.deep.equal(['view', 'buy', 'categoryview', 'updatecart', 'productview']);
      await visible(page.getByText('Only the events of visitor'));
      expect(await page.locator('table.events th').allTextContents(), 'no visitor column for one visitor').to.deep.equal([
        'Time',
        'Event',
        'Details',
      ]);
      await fitsWidth(page, DESKTOP.width, 'events of one visitor');
      await screenshot(page, 'events-visitor-filter-desktop', true);

      // a visitor with no events of that name, and an ID no visitor can have
      await pickEvent(page, 'checkout');
      await visible(page.getByText('No checkouts of this visitor yet.'));
      await page.getByLabel('Visitor ID').fill('not a visitor id!');
      await page.getByRole('button', { name: 'Filter' }).click();
      await visible(page.getByRole('alert').filter({ hasText: 'A visitor ID is 1 to 64 letters' }));
      expect(new URL(page.url()).searchParams.get('visitor')).to.equal(shopper);
      await page.getByRole('button', { name: 'All visitors' }).click();
      await pickEvent(page, '');
      await rowCount(page, 25);
      expect(new URL(page.url()).search).to.equal('');
    });

    it('renders hostile bodies inert: markup as text, only http(s) URLs as links', async () => {
      await page.goto(`${srv.url}/dashboard/organisations/${shop.id}/events?visitor=${shopper}`);
      await rowCount(page, 5);
      const table = page.locator('table.events');
      const text = (await table.textContent())!;
      for (const s of [HOSTILE_MARKUP, HOSTILE_SCRIPT, HOSTILE_URL, HOSTILE_DATA_URL]) expect(text, 'shown as text').to.include(s);
      expect(await table.locator('img, script, iframe, object, embed').count(), 'elements made from a body').to.equal(0);
      expect(await table.locator('[onerror], [onclick], [onload]').count()).to.equal(0);
      const hrefs = await table.locator('a').evaluateAll((as) => as.map((a) => a.getAttribute('href') ?? ''));
      for (const href of hrefs) expect(href).to.match(/^(https:\/\/|\/dashboard\/)/);
      expect(hrefs).to.include(`https://${shop.domain}/products/linen-shirt`);
      expect(hrefs).to.include(`https://${shop.domain}/img/shirt.jpg`);
      for (const rel of await table.locator('a[target="_blank"]').evaluateAll((as) => as.map((a) => a.getAttribute('rel'))))
        expect(rel).to.include('noopener');
      // the stored view: a javascript: page and a data: URL are text, the hostile key a label
      const stored = rows(page).first();
      expect(await stored.locator('td.details a').count()).to.equal(0);
      expect(await stored.locator('dt').allTextContents()).to.deep.equal(['Page', 'Image', HOSTILE_MARKUP]);
      // the cart's line is listed with its fields
      expect(await rows(page).nth(3).locator('ol.items li').textContent())
        .to.include('Quantity2')
        .and.include(`Title${HOSTILE_SCRIPT}`);
      expect(await page.title()).to.not.equal('pwned');
      await screenshot(page, 'events-hostile-desktop', true);
    });

    it('shows a visitor’s timeline on its page, newest first, with a link to its events', async () => {
      await page.goto(`${srv.url}/dashboard/organisations/${shop.id}/visitors`);
      await page.getByRole('link', { name: shopper }).click();
      await visible(page.getByRole('heading', { name: 'Timeline' }));
      await rowCount(page, 5);
      expect(await names(page)).to.deep.equal(['view', 'buy', 'categoryview', 'updatecart', 'productview']);
      expect(await page.locator('table.events th').allTextContents()).to.deep.equal(['Time', 'Event', 'Details']);
      await fitsWidth(page, DESKTOP.width, 'visitor');
      await screenshot(page, 'events-visitor-timeline-desktop', true);
      await page.getByRole('link', { name: 'Open on the Events page' }).click();
      await visible(page.getByRole('heading', { name: 'Events' }));
      expect(new URL(page.url()).searchParams.get('visitor')).to.equal(shopper);
      expect(await page.getByLabel('Visitor ID').inputValue()).to.equal(shopper);
      await rowCount(page, 5);

      // a long timeline pages like the Events page, and an event's visitor link leads back to the visitor
      await page.goto(`${srv.url}/dashboard/organisations/${shop.id}/events?name=view`);
      await rows(page).first().getByRole('link', { name: shopper }).click();
      await visible(page.getByRole('heading', { name: 'Timeline' }));
      await page.goto(`${srv.url}/dashboard/organisations/${shop.id}/visitors/${pager}`);
      await rowCount(page, 25);
      await page.getByRole('button', { name: 'Next' }).click();
      await rowCount(page, 5);
      expect(await rows(page).last().locator('td.details').textContent()).to.equal(`Pagehttps://${shop.domain}/p/1`);
    });

    it('shows nothing of another platform’s organisation, nor of a self-registered merchant’s', async () => {
      for (const orgId of [other.id, merchantOrg]) {
        await page.goto(`${srv.url}/dashboard/organisations/${orgId}/events`);
        await visible(page.getByRole('alert').filter({ hasText: 'not assigned to this account' }));
        expect(await page.locator('table').count()).to.equal(0);
        const text = (await page.locator('main').textContent())!;
        expect(text).to.not.include('secret-page').and.not.include('/bread');
      }
    });

    it('creates an integration that sends contact matches and events by default, as the README’s example', async () => {
      await page.goto(`${srv.url}/dashboard/organisations/${shop.id}/integrations`);
      await page.getByRole('button', { name: 'New integration' }).click();
      expect(await page.getByLabel('Contact matches').isChecked()).to.equal(true);
      expect(await page.getByLabel('Events of known contacts').isChecked()).to.equal(true);
      expect(await page.getByLabel('Active', { exact: true }).isChecked()).to.equal(true);
      await page.getByLabel('Endpoint URL').fill(receiver.url);
      await page.getByRole('button', { name: 'Create integration' }).click();
      const card = page.getByRole('listitem', { name: `Integration ${receiver.url}` });
      await visible(card);
      expect(await card.textContent()).to.include('contact matches and events');
      const listed = await srv.api.get<BodyOf<'listIntegrations'>>(`/v1/rest/acme/integration?org_id=${shop.id}`, { token: acme.token });
      expect(listed.body.items[0]!.data).to.include({ do_contacts: true, do_events: true });

      // and it does: the shopper becomes a contact (a match), then its next event is exported
      const id = await srv.api.get(`/jsv1/identify/${shop.id}/r-${shopper}/${shopper}/${b64url({ email: 'shopper@example.com' })}`);
      expect(id.status, id.text).to.equal(200);
      const [match] = await receiver.waitFor(1);
      expect(JSON.parse(match!.body)).to.include({ medium: 'matched', contact: 'shopper@example.com' });
      await track(shop.id, shopper, 'productview', { product_id: 12, product_url: `https://${shop.domain}/products/linen-trousers` });
      const [, exported] = await receiver.waitFor(2);
      expect(JSON.parse(exported!.body)).to.deep.include({
        medium: 'event',
        contact: 'shopper@example.com',
        source_event: 'productview',
        properties: { product_id: 12, product_url: `https://${shop.domain}/products/linen-trousers` },
      });
    });
  });

  describe('while the Events page is open', () => {
    it('shows a new event on the first page without a reload', async () => {
      const { context, page } = await open(DESKTOP);
      try {
        await signIn(page, acme);
        await page.goto(`${srv.url}/dashboard/organisations/${shop.id}/events`);
        await rowCount(page, 25);
        const late = unique('cl');
        await track(shop.id, late, 'removefromcart', { cart_url: `https://${shop.domain}/cart`, product_id: 11 });
        // the page asks again every 10 seconds: wait for the row, not for the clock
        await visible(rows(page).first().getByRole('link', { name: late }), 30_000);
        expect(await rows(page).first().locator('td.event-name').textContent()).to.equal('Removed from cart removefromcart');
        await rowCount(page, 25);
      } finally {
        await context.close();
      }
    });
  });

  describe('as a self-registered merchant', () => {
    it('shows a self-registered merchant its own events, and nothing of another organisation', async () => {
      const { context, page } = await open(DESKTOP);
      try {
        await page.goto(`${srv.url}/dashboard`);
        await page.getByLabel('a shop I registered myself').check();
        await page.getByLabel('Email').fill(merchant.email);
        await page.getByLabel('Password').fill(merchant.password);
        await page.getByRole('button', { name: 'Sign in' }).click();
        await visible(page.getByRole('heading', { name: merchant.domain }));
        await page.getByRole('navigation', { name: 'Organisation' }).getByRole('link', { name: 'Events' }).click();
        await rowCount(page, 2);
        expect(await names(page)).to.deep.equal(['productview', 'view']);
        const text = (await page.locator('main').textContent())!;
        expect(text).to.include(`https://${merchant.domain}/bread`);
        expect(text).to.not.include(shop.domain).and.not.include('secret-page');
        await screenshot(page, 'events-merchant-desktop', true);

        for (const orgId of [shop.id, other.id]) {
          await page.goto(`${srv.url}/dashboard/organisations/${orgId}/events`);
          await visible(page.getByRole('alert').filter({ hasText: 'not assigned to this account' }));
          expect(await page.locator('table').count()).to.equal(0);
        }
      } finally {
        await context.close();
      }
    });
  });

  describe('at phone width, with the data the flows above made', () => {
    it('fits the Events page and a timeline at phone width (390 px)', async () => {
      const { context, page } = await open(PHONE);
      try {
        await signIn(page, acme);
        const base = `${srv.url}/dashboard/organisations/${shop.id}`;
        const pages: [string, string][] = [
          ['events-phone', `${base}/events`],
          ['events-visitor-filter-phone', `${base}/events?visitor=${shopper}`],
          ['events-visitor-timeline-phone', `${base}/visitors/${shopper}`],
        ];
        for (const [name, url] of pages) {
          await page.goto(url);
          await visible(rows(page).first());
          await page.waitForFunction(() => !document.querySelector('.spinner'));
          await fitsWidth(page, PHONE.width, name);
          await screenshot(page, name, true);
        }
        await page.goto(`${srv.url}/dashboard/organisations/${shop.id}/events?name=checkout`);
        await visible(page.getByText('No checkouts yet.'));
        await fitsWidth(page, PHONE.width, 'events-empty');
        await screenshot(page, 'events-empty-phone', true);
      } finally {
        await context.close();
      }
    });
  });

  describe('throughout', () => {
    it('met no page error, CSP violation, dialog or request leaving the server', () => {
      expect(problems, problems.join('\n')).to.deep.equal([]);
    });
  });
});
