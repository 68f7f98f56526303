// The dashboard in Chromium against a real server, database and dispatcher:
// sign in, organisations (search, paging), an organisation (ids, snippet
// copied to the clipboard, activity), integrations (create, test, edit,
// toggle, secret, delete), deliveries (a failed one, its attempts, retry),
// visitors and one visitor's timeline, an expired session and sign-out. Every
// page is photographed at desktop and phone width into
// test-artifacts/screenshots/dashboard-*.png. The server, data, browser and
// page helpers they share are in world.ts.
import { expect } from 'chai';
import type { BrowserContext, Page } from 'playwright-core';
import { loadJwtSecret } from '../../src/platform/secrets.service.ts';
import { Tokens } from '../../src/platform/tokens.crypto.ts';
import { newWebhook, PASSWORD } from '../support/accounts.ts';
import { screenshot } from '../support/browser.ts';
import {
  account,
  dashboardWorld,
  DESKTOP,
  failingReceiver,
  fitsWidth,
  open,
  org,
  PHONE,
  problems,
  quiet,
  signIn,
  srv,
  testReceiver,
  visible,
  visitorA,
  visitorB,
} from './world.ts';
import { b64url } from '../support/payload.ts';
import type { BodyOf } from '../support/client.ts';

describe('dashboard in Chromium', function () {
  this.timeout(60_000);
  dashboardWorld();

  describe('at desktop width', () => {
    let context: BrowserContext;
    let page: Page;
    before(async () => ({ context, page } = await open(DESKTOP)));
    after(() => context?.close());

    it('signs in with platform, email and password, and says so when they are wrong', async () => {
      const res = await page.goto(`${srv.url}/dashboard`);
      expect(res?.status()).to.equal(200);
      await visible(page.getByRole('button', { name: 'Sign in' }));
      await screenshot(page, 'dashboard-signin-desktop', true);
      await page.getByLabel('Platform name').fill(account.platform);
      await page.getByLabel('Email').fill(account.email);
      await page.getByLabel('Password').fill('not the password');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await visible(page.getByRole('alert').filter({ hasText: 'platform name, email or password is wrong' }));

      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await visible(page.getByRole('heading', { name: 'Organisations' }));
      const stored = await page.evaluate(() => JSON.parse(sessionStorage.getItem('trackway.session') ?? 'null') as { token: string } | null);
      expect(stored?.token).to.be.a('string');
      expect(await page.evaluate(() => localStorage.length), 'nothing kept beyond the tab').to.equal(0);
    });

    it('lists organisations newest first, pages with the cursor and searches by domain', async () => {
      const rows = page.locator('table.rows tbody tr');
      await visible(rows.first());
      expect(await rows.count()).to.equal(25);
      expect(await rows.first().textContent())
        .to.include(org.domain)
        .and.include("Jane's Linen Shop")
        .and.include('Active');
      await fitsWidth(page, DESKTOP.width, 'organisations');
      await screenshot(page, 'dashboard-organisations-desktop', true);

      await page.getByRole('button', { name: 'Next' }).click();
      await visible(page.getByText('Page 2'));
      await page.waitForFunction(() => document.querySelectorAll('table.rows tbody tr').length === 2);
      expect(await page.getByRole('button', { name: 'Next' }).isDisabled()).to.equal(true);
      await page.getByRole('button', { name: 'Previous' }).click();
      await page.waitForFunction(() => document.querySelectorAll('table.rows tbody tr').length === 25);

      await page.getByLabel('Search by domain').fill(org.domain.split('.')[0]!.toUpperCase());
      await page.getByRole('button', { name: 'Search' }).click();
      await page.waitForFunction(() => document.querySelectorAll('table.rows tbody tr').length === 1);
      expect(page.url()).to.include('?q=');
      await page.getByLabel('Search by domain').fill('no-such-domain');
      await page.getByRole('button', { name: 'Search' }).click();
      await visible(page.getByText("No organisation's domain contains"));
      await page.getByRole('button', { name: 'Clear' }).click();
      await visible(rows.nth(24));
    });

    it('opens an organisation: id and token, the tracker snippet copied, activity counts and the hourly chart', async () => {
      await page.getByRole('link', { name: org.domain }).click();
      await visible(page.getByRole('heading', { name: org.domain }));
      expect(page.url()).to.equal(`${srv.url}/dashboard/organisations/${org.id}`);
      expect(await page.locator('#org-id').textContent()).to.equal(String(org.id));
      expect(await page.locator('#org-token').textContent()).to.equal(org.token);

      const snippet = `<script async src="${srv.url}/jsv1/tracker.js" data-org-id="${org.id}"></script>`;
      expect(await page.locator('#snippet').textContent()).to.equal(snippet);
      await page.getByRole('button', { name: 'Copy the tracker snippet' }).click();
      await visible(page.getByText('The tracker snippet copied'));
      expect(await page.evaluate(() => navigator.clipboard.readText())).to.equal(snippet);
      await page.getByRole('button', { name: 'Copy the organisation token' }).click();
      expect(await page.evaluate(() => navigator.clipboard.readText())).to.equal(org.token);

      const stats = page.locator('dl.stats > div');
      await visible(stats.first());
      expect((await stats.allTextContents()).map((t) => t.replace(/\s+/g, ' '))).to.deep.equal([
        'Visitors2last 24 hours2 over 7 days',
        'Contacts0last 24 hours0 over 7 days',
        'Events4last 24 hours4 over 7 days',
      ]);
      expect(await page.locator('.chart svg rect.bar').count()).to.equal(24);
      expect(await page.locator('.chart svg').getAttribute('aria-label')).to.match(/^4 events in the last 24 hours/);
      await fitsWidth(page, DESKTOP.width, 'organisation');
      await screenshot(page, 'dashboard-organisation-desktop', true);
    });

    it('creates, tests, edits, deactivates, activates and deletes an integration', async () => {
      await page.getByRole('navigation', { name: 'Organisation' }).getByRole('link', { name: 'Integrations' }).click();
      await visible(page.getByText('No integrations yet.'));
      await page.getByRole('button', { name: 'New integration' }).click();
      await page.getByLabel('Endpoint URL').fill(testReceiver.url);
      await page.getByLabel('Auth token (optional)').fill('dashboard-token-1234');
      await page.getByLabel('Events of known contacts').check();
      await screenshot(page, 'dashboard-integration-form-desktop', true);
      await page.getByRole('button', { name: 'Create integration' }).click();
      const card = page.getByRole('listitem', { name: `Integration ${testReceiver.url}` });
      await visible(card);
      await visible(page.getByText('Integration created.'));
      expect(await card.textContent())
        .to.include('contact matches and events')
        .and.include('****1234')
        .and.include('Active');

      // send test: a signed sample reaches the local receiver, and the result is shown
      const before = testReceiver.requests.length;
      await card.getByRole('button', { name: 'Send test' }).click();
      await visible(card.getByText('Test delivered'));
      expect(await card.locator('.result').textContent())
        .to.include('HTTP 200')
        .and.include('{"ok":true}');
      const sample = testReceiver.requests[before]!;
      expect(sample.headers.authorization).to.equal('Bearer dashboard-token-1234');
      expect(JSON.parse(sample.body)).to.include({ medium: 'matched', org_id: String(org.id) });
      await screenshot(page, 'dashboard-integrations-desktop', true);

      // the signing secret on request
      const listed = await srv.api.get<BodyOf<'listIntegrations'>>(`/v1/rest/${account.platform}/integration?org_id=${org.id}`, {
        token: account.token,
      });
      const secret = listed.body.items[0]!.signing_secret;
      expect(await card.textContent()).to.not.include(secret);
      await card.getByRole('button', { name: 'Show signing secret' }).click();
      await visible(card.getByText(secret));
      await card.getByRole('button', { name: 'Hide signing secret' }).click();

      // edit: the token is kept unless a new one is typed
      await card.getByRole('button', { name: 'Edit' }).click();
      const form = page.getByRole('form', { name: 'Edit integration' });
      await form.getByLabel('Timeout (seconds)').fill('15');
      await form.getByLabel('Events of known contacts').uncheck();
      await form.getByRole('button', { name: 'Save changes' }).click();
      await visible(page.getByText('Integration saved.'));
      await page.waitForFunction(() => document.querySelector('.cards')?.textContent?.includes('15 s'));
      const edited = await card.textContent();
      expect(edited).to.include('contact matches').and.include('****1234');
      expect(edited).to.not.include('and events');

      // deactivate and activate: the credential survives (a test still carries it)
      await card.getByRole('button', { name: 'Deactivate' }).click();
      await visible(card.getByText('Inactive'));
      await card.getByRole('button', { name: 'Activate' }).click();
      await visible(card.getByRole('button', { name: 'Deactivate' }));
      const n = testReceiver.requests.length;
      await card.getByRole('button', { name: 'Send test' }).click();
      await visible(card.getByText('Test delivered'));
      expect(testReceiver.requests[n]!.headers.authorization).to.equal('Bearer dashboard-token-1234');

      // delete, after a confirmation that can be declined
      await card.getByRole('button', { name: 'Delete' }).click();
      await card.getByRole('button', { name: 'Keep it' }).click();
      await card.getByRole('button', { name: 'Delete' }).click();
      await card.getByRole('alertdialog').getByRole('button', { name: 'Yes, delete' }).click();
      await visible(page.getByText('Integration deleted.'));
      await visible(page.getByText('No integrations yet.'));
      const after = await srv.api.get<BodyOf<'listIntegrations'>>(`/v1/rest/${account.platform}/integration?org_id=${org.id}`, {
        token: account.token,
      });
      expect(after.body.items).to.deep.equal([]);
    });

    it('shows a failed delivery with its attempts, retries it, and sees it delivered without reloading', async () => {
      await newWebhook(srv, account, org.id, { endpoint: failingReceiver.url, do_events: false, do_contacts: true });
      await page.getByRole('navigation', { name: 'Organisation' }).getByRole('link', { name: 'Deliveries' }).click();
      await visible(page.getByText('No deliveries yet.'));
      await page.getByRole('button', { name: 'Failed', exact: true }).click();
      expect(page.url()).to.include('status=failed');

      // the identify makes a contact match; the receiver answers 500 twice and it dead-letters
      const r = await srv.api.get(
        `/jsv1/identify/${org.id}/${visitorA.roaming}/${visitorA.core}/${b64url({ email: 'Jane.Doe@Example.com', name: 'Jane Doe' })}`,
        {
          headers: { 'x-forwarded-for': visitorA.ip },
        },
      );
      expect(r.status, r.text).to.equal(200);
      const card = page.getByRole('listitem').filter({ hasText: 'Contact match' });
      await visible(card, 20_000); // the page refreshes itself
      expect(await card.textContent())
        .to.include('jane.doe@example.com')
        .and.include('failed')
        .and.include(failingReceiver.url);
      await card.getByRole('button', { name: 'Show attempts (2)' }).click();
      const attempts = card.locator('table.attempts tbody tr');
      expect(await attempts.count()).to.equal(2);
      for (const row of await attempts.all())
        expect(await row.textContent())
          .to.include('500')
          .and.include('receiver is down');
      await fitsWidth(page, DESKTOP.width, 'deliveries');
      await screenshot(page, 'dashboard-deliveries-desktop', true);

      failingReceiver.respond(() => ({ status: 200, body: 'back up' }));
      await card.getByRole('button', { name: 'Retry' }).click();
      await visible(page.getByText(/will be sent again/));
      await page.getByRole('button', { name: 'All', exact: true }).click();
      const delivered = page.getByRole('listitem').filter({ hasText: 'Contact match' });
      await visible(delivered.locator('.badge', { hasText: 'delivered' }), 20_000);
      await delivered.getByRole('button', { name: 'Show attempts (3)' }).click();
      expect(await delivered.locator('table.attempts tbody tr').last().textContent())
        .to.include('200')
        .and.include('back up');
    });

    it('lists visitors and contacts and opens one with its recent activity and events', async () => {
      await page.getByRole('navigation', { name: 'Organisation' }).getByRole('link', { name: 'Visitors' }).click();
      const rows = page.locator('table.rows tbody tr');
      await page.waitForFunction(() => document.querySelectorAll('table.rows tbody tr').length === 2);
      expect(await rows.first().textContent())
        .to.include('Jane Doe')
        .and.include('jane.doe@example.com')
        .and.include('NL')
        .and.include('just now');
      expect(await rows.nth(1).textContent())
        .to.include(visitorB.core)
        .and.include('JP');
      await page.getByRole('button', { name: 'Contacts only' }).click();
      await page.waitForFunction(() => document.querySelectorAll('table.rows tbody tr').length === 1);
      await fitsWidth(page, DESKTOP.width, 'visitors');
      await page.getByRole('button', { name: 'All visitors' }).click();
      await page.waitForFunction(() => document.querySelectorAll('table.rows tbody tr').length === 2);
      await screenshot(page, 'dashboard-visitors-desktop', true);

      await page.getByRole('link', { name: 'Jane Doe' }).click();
      await visible(page.getByRole('heading', { name: 'Jane Doe' }));
      expect(await page.locator('dl.facts').first().textContent())
        .to.include(visitorA.core)
        .and.include('jane.doe@example.com');
      await visible(page.getByRole('link', { name: 'https://linen.example/products/linen-shirt' }).first());
      const events = page.locator('table.events tbody tr');
      await page.waitForFunction(() => document.querySelectorAll('table.events tbody tr').length === 3);
      expect(await page.locator('table.events td.event-name code').allTextContents()).to.deep.equal(['updatecart', 'productview', 'view']);
      expect(await events.nth(1).textContent()).to.include('https://linen.example/products/linen-shirt');
      await fitsWidth(page, DESKTOP.width, 'visitor');
      await screenshot(page, 'dashboard-visitor-desktop', true);
    });

    it('returns to sign-in with a message when the token has expired, and signs out', async () => {
      const expired = await new Tokens(await loadJwtSecret(srv.config.jwtSecret, srv.deps.db, srv.deps.cipher), -60).sign({
        userId: account.userId,
        platform: account.platform,
      });
      await page.evaluate((token) => {
        const s = JSON.parse(sessionStorage.getItem('trackway.session')!) as { token: string };
        sessionStorage.setItem('trackway.session', JSON.stringify({ ...s, token }));
      }, expired);
      await page.goto(`${srv.url}/dashboard/organisations/${org.id}/visitors`);
      await visible(page.getByText('Your session has expired. Sign in again to continue.'));
      await screenshot(page, 'dashboard-signin-expired-desktop', true);
      expect(await page.evaluate(() => sessionStorage.getItem('trackway.session'))).to.equal(null);

      // the form is filled in again but for the password; signing in with the keyboard alone lands on the page that was open
      expect(await page.getByLabel('Platform name').inputValue()).to.equal(account.platform);
      expect(await page.getByLabel('Email').inputValue()).to.equal(account.email);
      await page.getByLabel('Email').focus();
      await page.keyboard.press('Tab');
      expect(await page.evaluate(() => document.activeElement?.id)).to.equal('password');
      await page.keyboard.type(PASSWORD);
      await page.keyboard.press('Tab');
      const focus = await page.evaluate(() => {
        const el = document.activeElement as HTMLElement;
        return { text: el.textContent, outline: getComputedStyle(el).outlineStyle, width: getComputedStyle(el).outlineWidth };
      });
      expect(focus, 'a visible focus ring on the button').to.deep.equal({ text: 'Sign in', outline: 'solid', width: '3px' });
      await page.keyboard.press('Enter');
      await visible(page.getByRole('heading', { name: 'Visitors' }));

      await page.getByRole('button', { name: 'Sign out' }).click();
      await visible(page.getByText('You have signed out.'));
      expect(await page.evaluate(() => sessionStorage.getItem('trackway.session'))).to.equal(null);
    });
  });

  describe('at phone width, with the data the flows above made', () => {
    it('fits every page at phone width (390 px) and photographs it', async () => {
      const { context, page } = await open(PHONE);
      try {
        await page.goto(`${srv.url}/dashboard`);
        await visible(page.getByRole('button', { name: 'Sign in' }));
        await fitsWidth(page, PHONE.width, 'sign-in');
        await screenshot(page, 'dashboard-signin-phone', true);
        await signIn(page);
        const base = `${srv.url}/dashboard/organisations/${org.id}`;
        const pages: [string, string, () => Promise<void>][] = [
          ['organisations', `${srv.url}/dashboard`, () => visible(page.locator('table.rows tbody tr').first())],
          ['organisation', base, () => visible(page.locator('.chart svg'))],
          ['integrations', `${base}/integrations`, () => visible(page.locator('.cards .card').first())],
          [
            'deliveries',
            `${base}/deliveries`,
            async () => {
              await visible(page.getByRole('button', { name: /Show attempts/ }).first());
              await page
                .getByRole('button', { name: /Show attempts/ })
                .first()
                .click();
            },
          ],
          ['visitors', `${base}/visitors`, () => visible(page.locator('table.rows tbody tr').first())],
          ['visitor', `${base}/visitors/${visitorA.core}`, () => visible(page.getByRole('heading', { name: 'Jane Doe' }))],
          [
            'integration-form',
            `${base}/integrations`,
            async () => {
              await page.getByRole('button', { name: 'New integration' }).click();
              await visible(page.getByLabel('Endpoint URL'));
            },
          ],
          // the empty states, on an organisation without any activity
          ['organisation-empty', `${srv.url}/dashboard/organisations/${quiet!.id}`, () => visible(page.getByText('No events in the last 24 hours.'))],
          ['visitors-empty', `${srv.url}/dashboard/organisations/${quiet!.id}/visitors`, () => visible(page.getByText('No visitors yet.'))],
        ];
        for (const [name, url, ready] of pages) {
          await page.goto(url);
          await ready();
          await page.waitForFunction(() => !document.querySelector('.spinner'));
          await fitsWidth(page, PHONE.width, name);
          await screenshot(page, `dashboard-${name}-phone`, true);
        }
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
