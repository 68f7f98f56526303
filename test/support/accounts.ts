// Shared set-up for the tests of every area: every test makes its own platform
// accounts, merchants and integrations (no truncation between tests).
import { expect } from 'chai';
import { ensurePlatformAccount } from '../../src/platform/accounts.service.ts';
import type { components } from '../../generated/openapi.ts';
import { startTestServer, type TestServer } from './harness.ts';
import { type OrgId, testOrgId } from './org-id.ts';
import type { BodyOf } from './client.ts';

type Schemas = components['schemas'];

let seq = 0;

/** A name no other test (or concurrent run) uses. */
export function unique(prefix: string): string {
  return `${prefix}${process.pid.toString(36)}${Date.now().toString(36)}${(++seq).toString(36)}`;
}

/** A documentation-range client address, different on every call (needs TRUST_PROXY=true to take effect). */
export function uniqueIp(): string {
  const n = ++seq;
  return `198.51.${Math.floor(n / 250) % 250}.${(n % 250) + 1}`;
}

export interface Account {
  platform: string;
  email: string;
  password: string;
  userId: number;
  token: string;
}

export const PASSWORD = 'correct horse battery staple';

/** A webhook auth token (32 hex characters) for integrations made by tests. */
export const WEBHOOK_AUTH_TOKEN = '8c1e4b7d2f9a4e06b3c5d7e9f1a29f3a';

/** A platform account created like the CLI does, logged in through the API. */
export async function newAccount(srv: TestServer, platform = 'acme'): Promise<Account> {
  const email = `${unique('ops')}@platform.example`;
  const made = await ensurePlatformAccount(srv.deps, { platform, email, password: PASSWORD, name: 'Platform Ops' });
  const r = await srv.api.post<Schemas['LoginResponse']>(
    `/v1/rest/${platform}/users/login`,
    { email, password: PASSWORD },
    { headers: { 'x-forwarded-for': uniqueIp() } },
  );
  expect(r.status, r.text).to.equal(200);
  return { platform, email, password: PASSWORD, userId: made.userId, token: r.body.bearer_token };
}

export interface Merchant {
  user: { id: number; email: string };
  organisation: { id: OrgId; domain: string; token: string };
}

/** Registers a merchant (user + organisation) through the API. */
export async function newMerchant(srv: TestServer, account: Account, body: Record<string, unknown> = {}): Promise<Merchant> {
  const name = unique('m');
  const r = await srv.api.post<Schemas['RegisterResponse']>(
    `/v1/rest/${account.platform}/users/register`,
    { email: `${name}@merchant.example`, domain: `${name}.shop.example`, ...body },
    { token: account.token },
  );
  expect(r.status, r.text).to.equal(201);
  // the organisation's id, as the server gave it: where a test's number becomes an OrgId
  return { ...r.body, organisation: { ...r.body.organisation, id: testOrgId(r.body.organisation.id) } };
}

export function webhookBody(orgId: number, data: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
  return {
    org_id: orgId,
    active: true,
    type: 'WEBHOOK',
    data: { endpoint: 'https://hooks.example.com/trackway', do_events: true, do_contacts: true, ...data },
    ...extra,
  };
}

/** Creates a webhook integration through the API and returns it. */
export async function newWebhook(
  srv: TestServer,
  account: Account,
  orgId: number,
  data: Record<string, unknown> = {},
): Promise<{ id: number; org_id: OrgId; signing_secret: string; [k: string]: unknown }> {
  const r = await srv.api.post<BodyOf<'createIntegration'>>(`/v1/rest/${account.platform}/integration`, webhookBody(orgId, data), {
    token: account.token,
  });
  expect(r.status, r.text).to.equal(201);
  return { ...r.body.integration, org_id: testOrgId(r.body.integration.org_id) };
}

/**
 * For a describe block that needs a test server and one organisation of its
 * own (an account's first merchant) and nothing else: started before its
 * tests, stopped after them; read `srv` and `org` inside the tests.
 */
export function withMerchant(): { srv: TestServer; org: OrgId } {
  const ctx = {} as { srv: TestServer; org: OrgId };
  before(async () => {
    ctx.srv = await startTestServer();
    ctx.org = (await newMerchant(ctx.srv, await newAccount(ctx.srv))).organisation.id;
  });
  after(() => ctx.srv.stop());
  return ctx;
}
