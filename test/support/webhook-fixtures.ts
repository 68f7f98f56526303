// Rows for webhook tests, inserted with Kysely the way the platform and the
// ingest write them: a platform account with an organisation assigned to it,
// integrations with secrets encrypted by the server's cipher, and deliveries
// enqueued through the outbox in a transaction.
import { createHash, randomBytes } from 'node:crypto';
import { type Transaction, sql } from 'kysely';
import type { Registry } from 'prom-client';
import type { Database } from '../../src/db/database.ts';
import type { DB } from '../../src/db/schema.ts';
import type { Cipher } from '../../src/platform/secrets.service.ts';
import type { Tokens } from '../../src/platform/tokens.crypto.ts';
import { type NewDelivery, cancelPendingDeliveries, enqueueDeliveries } from '../../src/webhooks/outbox.repository.ts';
import { contactMatchedPayload } from '../../src/webhooks/payloads/contact-matched.payload.ts';
import { type TrackedEventName, eventExportedPayload } from '../../src/webhooks/payloads/event-exported.payload.ts';
import { announceIntegrationChange } from '../../src/webhooks/targets.service.ts';
import type { OrgId } from '../../src/db/tenancy.ts';
import { histogramTotals } from './histograms.ts';

let seq = 0;
const unique = () => `${process.pid}-${Date.now().toString(36)}-${++seq}`;

export interface Tenant {
  platform: string;
  userId: number;
  orgId: OrgId;
  /** a bearer token of the platform account */
  token: string;
}

export async function createTenant(db: Database, tokens: Tokens, platform = 'acme'): Promise<Tenant> {
  const tag = unique();
  const email = `platform-${tag}@example.com`;
  const user = await db
    .insertInto('users')
    .values({ email, email_key: email, password_hash: null, platform_name: platform })
    .returning('id')
    .executeTakeFirstOrThrow();
  const orgToken = randomBytes(16).toString('hex');
  const org = await db
    .insertInto('organisations')
    .values({
      token: orgToken,
      token_hash: createHash('sha256').update(orgToken).digest(),
      domain: `shop-${tag}.example.com`,
      domain_key: `shop-${tag}.example.com`,
      wid: null,
      referer: null,
      created_by: user.id,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  await db.insertInto('organisation_members').values({ user_id: user.id, org_id: org.id, role: 'platform' }).execute();
  await db
    .insertInto('organisation_domains')
    .values({ domain_key: `shop-${tag}.example.com`, org_id: org.id })
    .execute();
  await db
    .insertInto('organisation_tokens')
    .values({ token_hash: createHash('sha256').update(orgToken).digest(), org_id: org.id })
    .execute();
  return { platform, userId: user.id, orgId: org.id, token: await tokens.sign({ userId: user.id, platform }) };
}

export interface IntegrationInput {
  endpoint: string;
  authToken?: string | null;
  httpTimeout?: number;
  doEvents?: boolean;
  doContacts?: boolean;
  active?: boolean;
}

export interface TestIntegration {
  id: number;
  orgId: OrgId;
  signingSecret: string;
}

export async function createIntegration(db: Database, cipher: Cipher, orgId: OrgId, input: IntegrationInput): Promise<TestIntegration> {
  const signingSecret = `whsec_${randomBytes(32).toString('base64')}`;
  const authToken = input.authToken ?? null;
  const row = await db
    .insertInto('integrations')
    .values({
      org_id: orgId,
      type: 'WEBHOOK',
      active: input.active ?? true,
      endpoint: input.endpoint,
      auth_token_enc: authToken ? cipher.encrypt(authToken) : null,
      auth_token_hint: authToken ? `****${authToken.slice(-4)}` : null,
      http_timeout: input.httpTimeout ?? 5,
      do_events: input.doEvents ?? true,
      do_contacts: input.doContacts ?? true,
      signing_secret_enc: cipher.encrypt(signingSecret),
      deleted_at: null,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  // the id-only lookup of the platform API (integration/{id}), as insertIntegration writes it
  await db.insertInto('integration_owners').values({ id: row.id, org_id: orgId }).execute();
  return { id: row.id, orgId, signingSecret };
}

/** Enqueues the bodies for the integration in one transaction; returns the new delivery ids in order. */
export async function enqueue(db: Database, integration: TestIntegration, bodies: { kind: NewDelivery['kind']; body: unknown }[]): Promise<number[]> {
  return db.transaction().execute(async (tx) => {
    const before = await maxDeliveryId(tx);
    await enqueueDeliveries(
      tx,
      bodies.map((b) => ({
        orgId: integration.orgId,
        integrationId: integration.id,
        kind: b.kind,
        body: JSON.stringify(b.body),
        // the body's contact, as the fan-out gives it
        contact: (b.body as { contact?: string }).contact ?? '',
      })),
    );
    const rows = await tx
      .selectFrom('deliveries')
      .select('id')
      .where('org_id', '=', integration.orgId)
      .where('integration_id', '=', integration.id)
      .where('id', '>', before)
      .orderBy('id')
      .execute();
    return rows.map((r) => r.id);
  });
}

async function maxDeliveryId(tx: Transaction<DB>): Promise<number> {
  const r = await sql<{ m: number | null }>`SELECT max(id)::bigint AS m FROM deliveries`.execute(tx);
  return Number(r.rows[0]?.m ?? 0);
}

/** when matchedBody's matches happened: one instant, so two calls make equal bodies */
const MATCHED_AT = new Date();

/** A contact-match body for the organisation. */
export function matchedBody(orgId: OrgId, contact = 'jane.doe@example.com') {
  return contactMatchedPayload({
    orgId,
    contact,
    type: 'EMAIL',
    at: MATCHED_AT,
    visitor: { coreId: 'c-1', roamingId: 'r-1', corexId: null },
    lastView: ['https://shop.example.com/products/linen-shirt'],
    lastAddToCart: 'https://shop.example.com/products/linen-shirt',
  });
}

/** An event-export body for the organisation (a product view unless told otherwise). */
export function exportedBody(orgId: OrgId, contact = 'a@b.co', event: TrackedEventName = 'productview', type: 'EMAIL' | 'PHONE' = 'EMAIL') {
  return eventExportedPayload({
    orgId,
    contact,
    type,
    at: new Date(),
    event,
    eventId: 1,
    verified: true,
    visitor: { coreId: 'c-1', roamingId: 'r-1', corexId: null },
    properties:
      event === 'productview'
        ? { product_id: 42, price: 19.9, product_url: 'https://shop.example.com/products/linen-shirt' }
        : event === 'updatecart'
          ? { product_id: 42, cart_url: 'https://shop.example.com/cart', line_items: [], cart_value: 19.9 }
          : event === 'buy'
            ? { order_id: '1001' }
            : { page: 'https://shop.example.com/' },
    allowsUrl: () => true,
  });
}

/** What the platform does on PUT active=false: deactivate, cancel pending deliveries, tell the caches. */
export async function deactivate(db: Database, integration: TestIntegration, opts: { delete?: boolean } = {}): Promise<number> {
  return db.transaction().execute(async (tx) => {
    await tx
      .updateTable('integrations')
      .set({ active: false, modified_at: sql<Date>`now()`, ...(opts.delete ? { deleted_at: sql<Date>`now()` } : {}) })
      .where('org_id', '=', integration.orgId)
      .where('id', '=', integration.id)
      .execute();
    const cancelled = await cancelPendingDeliveries(tx, integration.orgId, integration.id);
    await announceIntegrationChange(tx, integration.orgId);
    return cancelled;
  });
}

export async function reactivate(db: Database, integration: TestIntegration): Promise<void> {
  await db.transaction().execute(async (tx) => {
    await tx
      .updateTable('integrations')
      .set({ active: true, modified_at: sql<Date>`now()` })
      .where('org_id', '=', integration.orgId)
      .where('id', '=', integration.id)
      .execute();
    await announceIntegrationChange(tx, integration.orgId);
  });
}

export { eventually } from './wait.ts';

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const many = (orgId: OrgId, n: number, tag: string) =>
  Array.from({ length: n }, (_, i) => ({ kind: 'matched' as const, body: matchedBody(orgId, `${tag}-${i}@example.com`) }));
/** A retry schedule long enough that no delivery dead-letters while the breaker is exercised. */
export const SCHEDULE = Array.from({ length: 30 }, () => '100ms').join(',');

/** The dispatcher's claim or outcome statements so far and the deliveries they carried (its own histogram). */
export async function statementRows(registry: Registry, statement: 'claim' | 'outcome'): Promise<{ statements: number; rows: number }> {
  const { count, sum } = await histogramTotals(registry, 'trackway_webhook_statement_rows', { statement });
  return { statements: count, rows: sum };
}
