// /docs (Swagger UI from the npm package, no CDN) renders the contract in
// Chromium at desktop and phone widths; screenshots go to
// test-artifacts/screenshots/. The pages carry a
// Content-Security-Policy: Swagger UI works under it with no violation.
import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, screenshot } from '../support/browser.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { newAccount } from '../support/accounts.ts';

describe('API reference (/docs) in Chromium', function () {
  let browser: Browser;
  let srv: TestServer;
  before(async function () {
    browser = await launchChromium(this);
    srv = await startTestServer();
  });
  after(async () => {
    await browser?.close();
    await srv?.stop();
  });

  for (const [name, viewport] of [
    ['desktop', { width: 1366, height: 900 }],
    ['phone', { width: 390, height: 844 }],
  ] as const) {
    it(`renders every operation at ${name} width (${viewport.width}px)`, async () => {
      const context = await browser.newContext({ viewport, deviceScaleFactor: 1, isMobile: name === 'phone' });
      try {
        const page: Page = await context.newPage();
        const errors: string[] = [];
        const outside: string[] = [];
        page.on('pageerror', (e) => errors.push(String(e)));
        page.on('request', (r) => {
          if (!r.url().startsWith(srv.url) && !r.url().startsWith('data:')) outside.push(r.url());
        });
        const res = await page.goto(`${srv.url}/docs`);
        expect(res?.status()).to.equal(200);
        await page.locator('.opblock').first().waitFor({ state: 'visible', timeout: 20_000 });
        expect(await page.locator('.information-container .title').first().textContent()).to.match(/Trackway API/);

        // every operation and webhook of the contract is listed
        const spec = (await (await fetch(`${srv.url}/openapi.json`)).json()) as Record<string, Record<string, Record<string, unknown>>>;
        const expected = [...Object.values(spec.paths ?? {}), ...Object.values(spec.webhooks ?? {})].flatMap((item) =>
          Object.keys(item).filter((k) => ['get', 'post', 'put', 'delete', 'patch'].includes(k)),
        ).length;
        expect(await page.locator('.opblock').count()).to.equal(expected);
        const paths = await page.locator('.opblock-summary-path').allTextContents();
        expect(paths.map((p) => p.replace(/\u200b/g, ''))).to.include.members(['/v1/rest/{platform_name}/users/login', '/jsv1/tracker.js']);

        // opening an operation shows its details
        const login = page.locator('.opblock', { hasText: '/v1/rest/{platform_name}/users/login' }).first();
        await login.locator('.opblock-summary').click();
        await login.locator('.opblock-body').waitFor({ state: 'visible' });
        // swagger-ui fills the opened body after it shows it: wait for the response schema's field, or time out
        await login
          .locator('.opblock-body', { hasText: 'bearer_token' })
          .waitFor({ state: 'visible', timeout: 15_000 })
          .catch(() => {});
        expect(await login.locator('.opblock-body').textContent()).to.include('bearer_token');
        await login.evaluate((el) => el.scrollIntoView());
        const opened = await screenshot(page, `docs-${name}-operation`);
        await login.locator('.opblock-summary').click();

        // nothing wider than the viewport (wide tables scroll inside themselves)
        const width = await page.evaluate(() => document.documentElement.scrollWidth);
        expect(width, 'page width in px').to.be.at.most(viewport.width);

        expect(errors).to.deep.equal([]);
        expect(outside, 'requests leaving the server').to.deep.equal([]);
        await page.evaluate(() => window.scrollTo(0, 0));
        const top = await screenshot(page, `docs-${name}`);
        console.log(`      screenshots: ${top}, ${opened}`);
      } finally {
        await context.close();
      }
    });
  }
  it('works under its Content-Security-Policy with no violation (/docs, an opened operation, /docs/webhooks)', async () => {
    const context = await browser.newContext({ viewport: { width: 1366, height: 900 } });
    try {
      const page: Page = await context.newPage();
      await page.addInitScript(() => {
        const w = window as unknown as { __violations: string[] };
        w.__violations = [];
        document.addEventListener('securitypolicyviolation', (e) => w.__violations.push(`${e.violatedDirective} ${e.blockedURI}`));
      });
      const cspMessages: string[] = [];
      page.on('console', (m) => {
        if (/Content Security Policy|Refused to/i.test(m.text())) cspMessages.push(m.text());
      });
      const res = await page.goto(`${srv.url}/docs`);
      expect(res?.headers()['content-security-policy']).to.include("default-src 'none'");
      await page.locator('.opblock').first().waitFor({ state: 'visible', timeout: 20_000 });
      // open an operation with a request body and its schema, and try it out (Swagger UI's interactive parts)
      const login = page.locator('.opblock', { hasText: '/v1/rest/{platform_name}/users/login' }).first();
      await login.locator('.opblock-summary').click();
      await login.locator('.opblock-body').waitFor({ state: 'visible' });
      await login.locator('button.try-out__btn').click();
      await login.locator('.model-box, .body-param, textarea').first().waitFor({ state: 'visible' });
      const onDocs = await page.evaluate(() => (window as unknown as { __violations: string[] }).__violations);
      await page.goto(`${srv.url}/docs/webhooks`);
      await page.locator('h1').waitFor();
      const styled = await page.evaluate(() => getComputedStyle(document.querySelector('pre')!).backgroundColor);
      const onWebhooks = await page.evaluate(() => (window as unknown as { __violations: string[] }).__violations);
      expect(onDocs, 'violations on /docs').to.deep.equal([]);
      expect(onWebhooks, 'violations on /docs/webhooks').to.deep.equal([]);
      expect(cspMessages, 'CSP messages in the console').to.deep.equal([]);
      // the inline style of /docs/webhooks applies (allowed by its hash)
      expect(styled).to.not.equal('rgba(0, 0, 0, 0)');
    } finally {
      await context.close();
    }
  });

  it('"Try it out" logs in against this server: the one servers list names it first, Execute answers 200', async () => {
    const account = await newAccount(srv);
    const context = await browser.newContext({ viewport: { width: 1366, height: 900 } });
    try {
      const page: Page = await context.newPage();
      const outside: string[] = [];
      page.on('request', (r) => {
        if (!r.url().startsWith(srv.url) && !r.url().startsWith('data:')) outside.push(r.url());
      });
      await page.goto(`${srv.url}/docs`);
      await page.locator('.opblock').first().waitFor({ state: 'visible', timeout: 20_000 });
      // the server chosen by default is this instance
      expect(await page.locator('.servers select').inputValue()).to.equal(srv.url);
      const login = page.locator('.opblock', { hasText: '/v1/rest/{platform_name}/users/login' }).first();
      await login.locator('.opblock-summary').click();
      await login.locator('.opblock-body').waitFor({ state: 'visible' });
      await login.locator('button.try-out__btn').click();
      await login.locator('tr[data-param-name="platform_name"] input').fill(account.platform);
      await login.locator('textarea.body-param__text').fill(JSON.stringify({ email: account.email, password: account.password }));
      // one servers list for the whole document: the operation shows none of its own
      expect(await login.locator('.servers').count()).to.equal(0);
      const answered = page.waitForResponse((r) => r.url() === `${srv.url}/v1/rest/${account.platform}/users/login`);
      await login.locator('button.execute').click();
      expect((await answered).status()).to.equal(200);
      // Swagger UI shows the live answer: 200 and the bearer token
      const live = login.locator('.live-responses-table .response');
      await live.first().waitFor({ state: 'visible' });
      expect((await live.locator('.response-col_status').first().textContent())?.trim()).to.equal('200');
      expect(await login.locator('.live-responses-table').textContent()).to.include('bearer_token');
      expect(outside, 'requests leaving the server').to.deep.equal([]);
      console.log(`      screenshot: ${await screenshot(page, 'docs-try-it-out-login')}`);
    } finally {
      await context.close();
    }
  });
});
