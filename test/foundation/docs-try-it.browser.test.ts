// "Try it out" works as printed (issue 23 point 1): in Chromium, /docs signs
// in through its own page (loginPlatformUser with the prefilled body, then
// Authorize with the token it answered), and every operation is executed
// with the values Swagger UI prefills from the contract's examples. Each
// answer must be the status expected below, and one the contract documents
// for that operation. The database is seeded so that the prefilled ids
// (organisation 42, integration 7, delivery 9812, privacy request 314,
// visitor c7f1d2a9-…, platform `acme` and its account) name real records.
// The webhooks listed on /docs are requests Trackway sends, not operations
// of this server: they have no "Try it out".
import { sql } from 'kysely';
import { expect } from 'chai';
import type { Browser, Locator, Page } from 'playwright-core';
import { ensurePlatformAccount } from '../../src/platform/accounts.service.ts';
import { organisationTokenHash } from '../../src/platform/registration.service.ts';
import { launchChromium, screenshot } from '../support/browser.ts';
import { doc } from '../support/contract.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { testOrgId } from '../support/org-id.ts';
import type { BodyOf } from '../support/client.ts';

type Json = Record<string, unknown>;
const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/** The status each operation answers with its prefilled values, on the seeded database. */
const EXPECTED: Record<string, number> = {
  loginPlatformUser: 200,
  registerClientUser: 201,
  listIntegrations: 200,
  createIntegration: 201,
  updateIntegration: 200,
  createIntegrationUnscoped: 201,
  updateIntegrationUnscoped: 200,
  getIntegration: 200,
  patchIntegration: 200,
  testIntegration: 200,
  listOrganisations: 200,
  getOrganisation: 200,
  rotateIdentitySecret: 200,
  getOrganisationStats: 200,
  listVisitors: 200,
  getVisitor: 200,
  listEvents: 200,
  listDeliveries: 200,
  listLearnEvents: 200,
  listPrivacyRequests: 200,
  getPrivacyRequest: 200,
  listPrivacySuppressions: 200,
  getDelivery: 200,
  retryDelivery: 409, // the seeded delivery is pending: only a failed or cancelled one can be retried
  getTrackerScript: 200,
  identifyVisitor: 200,
  recordViewEvent: 202,
  recordViewEventPixel: 200,
  recordUpdateCartEvent: 202,
  recordRemoveFromCartEvent: 202,
  recordCheckoutEvent: 202,
  recordBuyEvent: 202,
  recordProductViewEvent: 202,
  recordCategoryViewEvent: 202,
  submitLearningEvent: 200,
  registerAnalyticsUser: 200,
  getHealth: 200,
  getReadiness: 200,
  // last: these change what the others read (the erase example erases the seeded visitor and its
  // deliveries; settings; the integration; the account's password)
  createPrivacyRequest: 202,
  updateOrganisationSettings: 200,
  deleteIntegration: 204,
  changePassword: 200,
};

describe('API reference (/docs): "Try it out" on every operation with its prefilled values', function () {
  let browser: Browser;
  let srv: TestServer;
  before(async function () {
    this.timeout(180_000);
    browser = await launchChromium(this);
    const login = (doc.paths['/v1/rest/{platform_name}/users/login']!.post as Json).requestBody as Json;
    const credentials = ((login.content as Json)['application/json'] as Json).example as { email: string; password: string };
    const registration = (doc.components.parameters as Record<string, Json>).RegistrationToken!.example as string;
    srv = await startTestServer({ REGISTRATION_TOKEN: registration });
    await seed(srv, credentials);
  });
  after(async () => {
    await browser?.close();
    await srv?.stop();
  });

  it('answers each operation as expected, with a status its contract documents', async function () {
    this.timeout(900_000);
    const operations = Object.values(doc.paths).flatMap((item) =>
      Object.entries(item)
        .filter(([method]) => METHODS.includes(method))
        .map(([, op]) => op),
    );
    // every operation has its expected answer, and that answer is documented for it
    expect(Object.keys(EXPECTED).sort()).to.deep.equal(operations.map((op) => op.operationId as string).sort());
    const documented = new Map(operations.map((op) => [op.operationId as string, Object.keys(op.responses as Json)]));
    for (const [id, status] of Object.entries(EXPECTED)) expect(documented.get(id), id).to.include(String(status));

    const context = await browser.newContext({ viewport: { width: 1366, height: 900 } });
    try {
      const page: Page = await context.newPage();
      await page.goto(`${srv.url}/docs`);
      await page.locator('.opblock').first().waitFor({ state: 'visible', timeout: 60_000 });

      // sign in through the page: login with its prefilled body, then Authorize with the token
      const token = JSON.parse(await execute(page, 'loginPlatformUser', 200, true)) as { bearer_token: string };
      await page.locator('.auth-wrapper button.authorize').click();
      const dialog = page.locator('.modal-ux');
      await dialog.locator('input[type=text], input[type=password]').first().fill(token.bearer_token);
      await dialog.locator('button.auth.authorize, .auth-btn-wrapper button.authorize').first().click();
      await dialog.locator('button.btn-done, button.close-modal').first().click();

      const answers: Record<string, number> = { loginPlatformUser: 200 };
      for (const id of Object.keys(EXPECTED)) {
        if (id === 'loginPlatformUser') continue;
        answers[id] = Number(await execute(page, id, EXPECTED[id]!));
      }
      console.log(`      screenshot: ${await screenshot(page, 'docs-try-it-out-every-operation')}`);
      expect(answers).to.deep.equal(EXPECTED);
    } finally {
      await context.close();
    }
  });
});

/** Opens the operation, presses "Try it out" then "Execute"; returns the status shown (or the body, for `body`). */
async function execute(page: Page, operationId: string, expected: number, body = false): Promise<string> {
  const block: Locator = page.locator(`.opblock[id$="-${operationId}"]`);
  await block.locator('.opblock-summary').first().click();
  await block
    .locator('button.try-out__btn')
    .click()
    .catch(async (err: unknown) => {
      console.log(`      ${operationId}: ${await screenshot(page, `docs-try-it-out-${operationId}`)}`);
      throw err;
    });
  await block.locator('button.execute').click();
  const status = block.locator('.live-responses-table tr.response .response-col_status').first();
  await status.waitFor({ state: 'visible', timeout: 60_000 });
  const shown = (await status.textContent())?.trim() ?? '';
  const text = body ? ((await block.locator('.live-responses-table tr.response .response-col_description pre').first().textContent()) ?? '') : shown;
  if (Number(shown) !== expected) {
    const answer = await block.locator('.live-responses-table tr.response .response-col_description').first().textContent();
    console.log(`      ${operationId}: ${shown} ${answer?.slice(0, 300)}`);
  }
  await block.locator('.opblock-summary').first().click(); // closed again: the page stays small
  return text;
}

/** The records the prefilled ids and bodies name. */
async function seed(srv: TestServer, credentials: { email: string; password: string }): Promise<void> {
  const db = srv.database.handle.db;
  await ensurePlatformAccount(srv.deps, { platform: 'acme', email: credentials.email, password: credentials.password, name: 'Acme' });
  const login = await srv.api.post<BodyOf<'loginPlatformUser'>>('/v1/rest/acme/users/login', credentials);
  const token = login.body.bearer_token;
  const next = (table: string, id: number) => sql`SELECT setval(${`${table}_id_seq`}, ${id - 1})`.execute(db);
  // organisation 42, with the domain the examples' tracking pages use
  await next('organisations', 42);
  const reg = await srv.api.post<BodyOf<'registerClientUser'>>(
    '/v1/rest/acme/users/register',
    { email: 'owner@linen.shop.example', domain: 'linen.shop.example' },
    { token },
  );
  expect(reg.status, reg.text).to.equal(201);
  const orgId = testOrgId(reg.body.organisation.id);
  expect(orgId).to.equal(42);
  // the learning-event example's org_token is organisation 42's (looked up by its sha256)
  const learn = (doc.paths['/rest/v1/learn/event']!.post as Json).requestBody as Json;
  const learnExamples = ((learn.content as Json)['application/json'] as Json).examples as Record<string, { value: { org_token: string } }>;
  const tokenHash = organisationTokenHash(Object.values(learnExamples)[0]!.value.org_token);
  await db.updateTable('organisations').set({ token_hash: tokenHash }).where('id', '=', orgId).execute();
  await db.updateTable('organisation_tokens').set({ token_hash: tokenHash }).where('org_id', '=', orgId).execute();
  // integration 7 of organisation 42
  await next('integrations', 7);
  const hook = await srv.api.post<BodyOf<'createIntegration'>>(
    '/v1/rest/acme/integration',
    {
      org_id: orgId,
      active: true,
      type: 'WEBHOOK',
      data: { endpoint: 'https://hooks.shop.example.com/trackway', do_events: true, do_contacts: true },
    },
    { token },
  );
  expect(hook.status, hook.text).to.equal(201);
  expect(hook.body.integration.id).to.equal(7);
  // visitor c7f1d2a9-… becomes a contact: delivery 9812 (pending; no dispatcher runs here)
  await next('deliveries', 9812);
  const params = doc.components.parameters as Record<string, Json>;
  const identify = await srv.api.get(
    `/jsv1/identify/${orgId}/${params.RoamingId!.example as string}/${params.CoreId!.example as string}/${params.IdentifyPayloadSegment!.example as string}`,
  );
  expect(identify.status, identify.text).to.equal(200);
  const deliveries = await srv.api.get<BodyOf<'listDeliveries'>>(`/v1/rest/acme/organisations/${orgId}/deliveries`, { token });
  expect(deliveries.body.items.map((d: { id: number }) => d.id)).to.include(9812);
  // privacy request 314
  await next('privacy_requests', 314);
  const privacy = await srv.api.post<BodyOf<'createPrivacyRequest'>>(
    `/v1/rest/acme/organisations/${orgId}/privacy-requests`,
    { type: 'export', subject: { email: 'someone.else@example.com' } },
    { token },
  );
  expect(privacy.status, privacy.text).to.equal(202);
  expect(privacy.body.id).to.equal(314);
}
