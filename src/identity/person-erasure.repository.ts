// Deleting a person's identity records, for erasure and retention
// (src/privacy/eraser.service.ts): visitors with their links, contacts with theirs,
// persons, and the product URLs their views alone put in the catalogue. Each
// function runs in the caller's short transaction and touches a bounded set
// of rows; every statement names its organisation.
import { sql } from 'kysely';
import { VISITORS_CHANNEL } from '../db/notifications.ts';
import type { Tx, OrgId } from '../db/tenancy.ts';
import { orgScoped } from '../db/tenancy.ts';
import type { ContactType } from './normalise.rules.ts';

/**
 * Locks the visitors (`org_id = $1`: the form of FOR UPDATE Citus runs on
 * one shard). A concurrent ingest batch that touches one of them waits until
 * the caller's transaction ends, and then finds no visitor: it makes a new
 * one (a new person), which the erasure does not cover.
 */
export async function lockVisitors(tx: Tx, orgId: OrgId, coreIds: readonly string[]): Promise<void> {
  if (coreIds.length === 0) return;
  await sql`SELECT core_id FROM visitors WHERE org_id = ${orgId}::bigint AND core_id = ANY(${coreIds}::text[]) FOR UPDATE`.execute(tx);
}

/**
 * Deletes the visitors' links to contacts and the visitors themselves (name,
 * user agent, location with them); how many visitors. Every process hears of
 * it when the transaction commits (VISITORS_CHANNEL): what they remember of
 * the organisation's visitors (fresh-visitors.service.ts) no longer holds.
 */
export async function deleteVisitors(tx: Tx, orgId: OrgId, coreIds: readonly string[]): Promise<number> {
  if (coreIds.length === 0) return 0;
  await orgScoped(tx, orgId).deleteFrom('visitor_contacts').where('core_id', 'in', coreIds).execute();
  const r = await orgScoped(tx, orgId).deleteFrom('visitors').where('core_id', 'in', coreIds).executeTakeFirst();
  await sql`SELECT pg_notify(${VISITORS_CHANNEL}, ${String(orgId)})`.execute(tx);
  return Number(r.numDeletedRows);
}

/**
 * Deletes up to `limit` contacts of the persons, with every link to them;
 * returns what they were (for the receivers' erasure notices, written in the
 * same transaction).
 */
export async function deleteContactsOfPersons(
  tx: Tx,
  orgId: OrgId,
  persons: readonly number[],
  limit: number,
): Promise<{ type: ContactType; value: string }[]> {
  if (persons.length === 0) return [];
  const doomed = await orgScoped(tx, orgId)
    .selectFrom('contacts')
    .select('id')
    .where('person_id', 'in', persons)
    .orderBy('id')
    .limit(limit)
    .forUpdate()
    .execute();
  if (doomed.length === 0) return [];
  const ids = doomed.map((c) => c.id);
  await orgScoped(tx, orgId).deleteFrom('visitor_contacts').where('contact_id', 'in', ids).execute();
  return orgScoped(tx, orgId).deleteFrom('contacts').where('id', 'in', ids).returning(['type', 'value']).execute();
}

/** Deletes the persons' profiles (recent views, cart); how many. */
export async function deletePersons(tx: Tx, orgId: OrgId, persons: readonly number[]): Promise<number> {
  if (persons.length === 0) return 0;
  const r = await orgScoped(tx, orgId).deleteFrom('persons').where('id', 'in', persons).executeTakeFirst();
  return Number(r.numDeletedRows);
}

/**
 * The product catalogue (the latest URL seen per product) is the shop's,
 * shared by everyone who viewed a product; an entry goes with an erased
 * person only when the URL it holds is one the person's own events carried
 * (their view may be what put it there) and no other person's cart still
 * needs it (the catalogue's only reader: last_addtocart). A later view of
 * the product by anyone puts it back. Returns how many entries went.
 */
export async function forgetProductUrls(
  tx: Tx,
  orgId: OrgId,
  sightings: readonly { productId: number; url: string }[],
  persons: readonly number[],
): Promise<number> {
  if (sightings.length === 0) return 0;
  const r = await sql`
    DELETE FROM products p
    USING unnest(${sightings.map((s) => s.productId)}::bigint[], ${sightings.map((s) => s.url)}::text[]) AS s(product_id, url)
    WHERE p.org_id = ${orgId}::bigint AND p.product_id = s.product_id AND p.url = s.url
      AND NOT EXISTS (
        SELECT 1 FROM persons q
        WHERE q.org_id = ${orgId}::bigint AND q.last_cart_product_id = p.product_id AND q.id <> ALL(${persons}::bigint[])
      )
  `.execute(tx);
  return Number(r.numAffectedRows ?? 0);
}
