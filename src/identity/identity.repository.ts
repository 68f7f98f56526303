// Visitors, persons (stitched visitors), contacts and the product URL
// catalogue. Every statement is scoped by org_id first.
import { type Kysely, sql } from 'kysely';
import type { DB, Location, RecentView } from '../db/schema.ts';

type Tx = Kysely<DB>; // a transaction or the database

export interface VisitorTouch {
  orgId: number;
  coreId: string;
  roamingId: string;
  corexId: string | null;
  firstSeen: Date;
  lastSeen: Date;
  userAgent: string | null;
  location: Location | null;
}

export interface TouchedVisitor {
  org_id: number;
  core_id: string;
  person_id: number;
  corex_id: string | null;
  /** the corex_id before this statement; null for a new visitor */
  old_corex_id: string | null;
  inserted: boolean;
}

/**
 * Creates or refreshes visitors, one row per (org_id, core_id) (callers
 * dedupe), and reports each one's person and whether its corex_id changed.
 * The `before` CTE reads the pre-statement rows (and locks them), which is how
 * the old corex_id is known without a second round trip.
 */
export async function upsertVisitors(tx: Tx, rows: VisitorTouch[]): Promise<TouchedVisitor[]> {
  if (rows.length === 0) return [];
  const values = sql.join(
    rows.map(
      (r) =>
        sql`(${r.orgId}::bigint, ${r.coreId}::text, ${r.roamingId}::text, ${r.corexId}::text, ${r.firstSeen}::timestamptz, ${r.lastSeen}::timestamptz, ${r.userAgent}::text, ${r.location === null ? null : JSON.stringify(r.location)}::jsonb)`,
    ),
  );
  const { rows: out } = await sql<TouchedVisitor>`
    WITH incoming (org_id, core_id, roaming_id, corex_id, first_seen, last_seen, user_agent, location) AS (VALUES ${values}),
    before AS (
      SELECT v.org_id, v.core_id, v.corex_id
      FROM visitors v JOIN incoming i ON i.org_id = v.org_id AND i.core_id = v.core_id
      FOR UPDATE OF v
    )
    INSERT INTO visitors AS v (org_id, core_id, roaming_id, corex_id, first_seen, last_seen, user_agent, location)
    SELECT org_id, core_id, roaming_id, corex_id, first_seen, last_seen, user_agent, location FROM incoming
    ON CONFLICT (org_id, core_id) DO UPDATE SET
      roaming_id = EXCLUDED.roaming_id,
      corex_id = COALESCE(EXCLUDED.corex_id, v.corex_id),
      last_seen = GREATEST(v.last_seen, EXCLUDED.last_seen),
      user_agent = COALESCE(EXCLUDED.user_agent, v.user_agent),
      location = COALESCE(EXCLUDED.location, v.location)
    RETURNING v.org_id, v.core_id, v.person_id, v.corex_id,
      (SELECT b.corex_id FROM before b WHERE b.org_id = v.org_id AND b.core_id = v.core_id) AS old_corex_id,
      (xmax = 0) AS inserted
  `.execute(tx);
  return out;
}

/** Persons (other than `person`) that have a visitor with this corex_id. */
export async function personsSharingCorex(tx: Tx, orgId: number, corexId: string, person: number): Promise<number[]> {
  const rows = await tx
    .selectFrom('visitors')
    .select('person_id')
    .distinct()
    .where('org_id', '=', orgId)
    .where('corex_id', '=', corexId)
    .where('person_id', '<>', person)
    .execute();
  return rows.map((r) => r.person_id);
}

export async function setVisitorName(tx: Tx, orgId: number, coreId: string, name: string): Promise<void> {
  await tx.updateTable('visitors').set({ name }).where('org_id', '=', orgId).where('core_id', '=', coreId).execute();
}

/** The contact (created for `person` when new) and the person it belongs to. */
export async function upsertContact(
  tx: Tx,
  orgId: number,
  type: 'EMAIL' | 'PHONE',
  value: string,
  person: number,
): Promise<{ id: number; person_id: number }> {
  // DO UPDATE (a no-op) rather than DO NOTHING so an existing row is returned and locked
  return tx
    .insertInto('contacts')
    .values({ org_id: orgId, type, value, person_id: person })
    .onConflict((oc) => oc.columns(['org_id', 'type', 'value']).doUpdateSet({ person_id: sql`contacts.person_id` }))
    .returning(['id', 'person_id'])
    .executeTakeFirstOrThrow();
}

/** Links a visitor to a contact; true when the link is new. */
export async function linkVisitorContact(tx: Tx, orgId: number, coreId: string, contactId: number): Promise<boolean> {
  const r = await tx
    .insertInto('visitor_contacts')
    .values({ org_id: orgId, core_id: coreId, contact_id: contactId })
    .onConflict((oc) => oc.doNothing())
    .returning('contact_id')
    .executeTakeFirst();
  return r !== undefined;
}

export async function contactsOfPerson(tx: Tx, orgId: number, person: number) {
  return tx
    .selectFrom('contacts')
    .select(['type', 'value'])
    .where('org_id', '=', orgId)
    .where('person_id', '=', person)
    .orderBy('id')
    .execute();
}

export interface PersonProfile {
  id: number;
  last_view: RecentView[];
  last_cart_product_id: number | null;
  last_cart_url: string | null;
  last_cart_at: Date | null;
}

export async function lockPersons(tx: Tx, orgId: number, ids: number[]): Promise<PersonProfile[]> {
  return tx
    .selectFrom('persons')
    .select(['id', 'last_view', 'last_cart_product_id', 'last_cart_url', 'last_cart_at'])
    .where('org_id', '=', orgId)
    .where('id', 'in', ids)
    .forUpdate()
    .execute();
}

/** Moves every visitor and contact of `gone` to `keep`, stores the merged profile, deletes `gone`. */
export async function mergePersons(tx: Tx, orgId: number, keep: number, gone: number, merged: Omit<PersonProfile, 'id'>) {
  await tx.updateTable('visitors').set({ person_id: keep }).where('org_id', '=', orgId).where('person_id', '=', gone).execute();
  await tx.updateTable('contacts').set({ person_id: keep }).where('org_id', '=', orgId).where('person_id', '=', gone).execute();
  await tx.deleteFrom('persons').where('org_id', '=', orgId).where('id', '=', gone).execute();
  await tx
    .insertInto('persons')
    .values({
      org_id: orgId,
      id: keep,
      last_view: JSON.stringify(merged.last_view),
      last_cart_product_id: merged.last_cart_product_id,
      last_cart_url: merged.last_cart_url,
      last_cart_at: merged.last_cart_at,
    })
    .onConflict((oc) =>
      oc.columns(['org_id', 'id']).doUpdateSet({
        last_view: JSON.stringify(merged.last_view),
        last_cart_product_id: merged.last_cart_product_id,
        last_cart_url: merged.last_cart_url,
        last_cart_at: merged.last_cart_at,
      }),
    )
    .execute();
}

export async function pushProductView(tx: Tx, orgId: number, person: number, url: string, at: Date): Promise<void> {
  await sql`
    INSERT INTO persons (org_id, id, last_view) VALUES (${orgId}, ${person}, trackway_push_view(NULL, ${url}, ${at}))
    ON CONFLICT (org_id, id) DO UPDATE SET last_view = trackway_push_view(persons.last_view, ${url}, ${at})
  `.execute(tx);
}

export async function setLastCart(tx: Tx, orgId: number, person: number, productId: number, cartUrl: string, at: Date) {
  await tx
    .insertInto('persons')
    .values({ org_id: orgId, id: person, last_cart_product_id: productId, last_cart_url: cartUrl, last_cart_at: at })
    .onConflict((oc) =>
      oc.columns(['org_id', 'id']).doUpdateSet({ last_cart_product_id: productId, last_cart_url: cartUrl, last_cart_at: at }),
    )
    .execute();
}

/** Remembers the latest URL seen for each product (productview, checkout and buy items). */
export async function rememberProductUrls(tx: Tx, orgId: number, urls: Map<number, string>, at: Date): Promise<void> {
  if (urls.size === 0) return;
  await tx
    .insertInto('products')
    .values([...urls].map(([product_id, url]) => ({ org_id: orgId, product_id, url, seen_at: at })))
    .onConflict((oc) =>
      oc
        .columns(['org_id', 'product_id'])
        .doUpdateSet({ url: sql`EXCLUDED.url`, seen_at: sql`EXCLUDED.seen_at` })
        .where('products.seen_at', '<=', sql<Date>`EXCLUDED.seen_at`),
    )
    .execute();
}

export async function productUrl(tx: Tx, orgId: number, productId: number): Promise<string | undefined> {
  const row = await tx
    .selectFrom('products')
    .select('url')
    .where('org_id', '=', orgId)
    .where('product_id', '=', productId)
    .executeTakeFirst();
  return row?.url;
}

export async function personProfile(tx: Tx, orgId: number, person: number): Promise<PersonProfile | undefined> {
  return tx
    .selectFrom('persons')
    .select(['id', 'last_view', 'last_cart_product_id', 'last_cart_url', 'last_cart_at'])
    .where('org_id', '=', orgId)
    .where('id', '=', person)
    .executeTakeFirst();
}
