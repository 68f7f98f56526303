// Visitors, persons (stitched visitors), contacts and the product URL
// catalogue. Every statement is scoped by org_id first.
import { type RawBuilder, sql } from 'kysely';
import { PLAIN_POSTGRES, PREPARE } from '../db/database.ts';
import type { RecentView } from '../db/schema.ts';
import { isDistributed } from '../db/distribution.ts';
import { type Executor, orgScoped, type OrgId } from '../db/tenancy.ts';
import { isoTimestamp } from '../db/timestamps.ts';
import { lockCorexIds, visitorKey } from './visitor-locks.repository.ts';
import { type VisitorTouch, visitorsUpsert } from './visitors-upsert.repository.ts';

export type { VisitorTouch } from './visitors-upsert.repository.ts';

export interface TouchedVisitor {
  org_id: OrgId;
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
 *
 * When a row brings a corex_id, the old one matters (a change stitches): the
 * batch's existing visitors are first locked and read, one statement per
 * organisation (`org_id = $1`: under Citus a locking read must reach one
 * shard, and rows taken from a parameter do not say which). Most batches
 * bring none and skip it.
 *
 * Visitors that need no write (WORTH_A_WRITE_SQL) are not returned by the upsert,
 * but ON CONFLICT has locked them: a second statement reads them, with a
 * snapshot taken after every change committed before the lock, so their
 * person_id is the current one (a merge in a concurrent batch included).
 *
 * `alongside`, when given, is another data-modifying statement of the batch
 * (its events insert) that the upsert carries as a CTE: one round trip for both.
 */
export async function upsertVisitors(tx: Executor, rows: VisitorTouch[], alongside?: RawBuilder<unknown>): Promise<TouchedVisitor[]> {
  if (rows.length === 0) {
    if (alongside) await sql`${alongside}`.execute(tx);
    return [];
  }
  const before = rows.some((r) => r.corexId !== null) ? await lockCorexIds(tx, rows) : null;
  const { rows: written } = await sql<
    Omit<TouchedVisitor, 'old_corex_id'>
  >`${sql.raw(PREPARE)}${alongside ? sql`WITH alongside AS (${alongside})` : sql``}
    ${visitorsUpsert(rows)}
    RETURNING v.org_id, v.core_id, v.person_id, v.corex_id, (xmax = 0) AS inserted
  `.execute(tx);
  // without a corex_id in the batch no row's corex_id moved: the old one is the current one
  // field by field, in the read-back's order: a spread with an added property would give each row a hidden class of its own (src/tracking/ingest.types.ts eventItem)
  const out: TouchedVisitor[] = written.map((r) => ({
    org_id: r.org_id,
    core_id: r.core_id,
    person_id: r.person_id,
    corex_id: r.corex_id,
    old_corex_id: before ? (before.get(visitorKey(r.org_id, r.core_id)) ?? null) : r.corex_id,
    inserted: r.inserted,
  }));
  if (out.length === rows.length) return out;
  // the visitors left as they were: locked above, read now (unchanged, so old_corex_id = corex_id)
  const seen = new Set(out.map((r) => visitorKey(r.org_id, r.core_id)));
  const rest = rows.filter((r) => !seen.has(visitorKey(r.orgId, r.coreId)));
  return [...out, ...(await readBack(tx, rest))];
}

/** Whether visitors is distributed here (Citus): read once per process, as the service never changes database. */
let visitorsDistributed: Promise<boolean> | undefined;

/**
 * Whether visitors is distributed (Citus), asked once per process: the reads
 * of visitors by key have a plain PostgreSQL form (PLAIN_POSTGRES) and one
 * that names its organisations (readBack below; the plain batch's held
 * visitors, src/identity/profile-upsert.repository.ts).
 */
export function visitorsAreDistributed(db: Executor): Promise<boolean> {
  visitorsDistributed ??= isDistributed(db, 'visitors').catch((err: unknown) => {
    visitorsDistributed = undefined; // asked again by the next batch
    throw err;
  });
  return visitorsDistributed;
}

/**
 * The plain PostgreSQL read of visitors by key (a FROM item named `v`, with
 * org_id, core_id, person_id, corex_id): each (organisation, core id) pair
 * looked up by a LATERAL subquery whose only conditions are both key columns
 * from the pair, so that no plan, generic or custom, can make it a walk of
 * the organisation (readBack below says why). `lock`: FOR SHARE of each row
 * found (the plain batch's held visitors, profile-upsert.repository.ts).
 * Only where visitorsAreDistributed says false; its statement starts with
 * PLAIN_POSTGRES.
 */
export function visitorsByKey(keys: readonly { orgId: OrgId; coreId: string }[], lock: 'FOR SHARE' | '' = ''): RawBuilder<unknown> {
  return sql`unnest(${keys.map((k) => k.orgId)}::bigint[], ${keys.map((k) => k.coreId)}::text[]) AS k(org_id, core_id)
      CROSS JOIN LATERAL (
        SELECT v.org_id, v.core_id, v.person_id, v.corex_id FROM visitors v WHERE v.org_id = k.org_id AND v.core_id = k.core_id ${sql.raw(lock)}
      ) v`;
}

/**
 * The visitors an upsert left unchanged, read back by key (their row locks
 * are the upsert's, so person_id is current). The read must be a primary key
 * lookup per visitor whatever PostgreSQL believes of the organisation's size:
 * a join with the keys as a jsonb record set made a generic plan that hashed
 * every visitor of the organisation (docs/profiles/visitors-read-back.md), and
 * `org_id = ANY($orgs) AND core_id = ANY($cores)` made a custom plan on
 * statistics taken before a new organisation grew walk all its visitors,
 * estimated at one row, through an index that begins with org_id: 5–8 ms for
 * two keys in the bench's mixed load (docs/profiles/mixed-new-organisation-plans.md).
 *
 * On plain PostgreSQL each (organisation, core id) pair is looked up by a
 * LATERAL subquery whose only conditions are both key columns from the pair
 * (visitorsByKey): a unique key lookup is one row in every plan, generic or
 * custom, and no condition on the organisation alone exists for a plan to
 * scan it by. Under
 * Citus the read must name its organisations to reach their shards only, so
 * there it keeps `org_id = ANY AND core_id = ANY` (and drops rows pairing one
 * organisation with another's core id); the shard's plan is its worker's.
 */
async function readBack(tx: Executor, rest: VisitorTouch[]): Promise<TouchedVisitor[]> {
  if (!(await visitorsAreDistributed(tx))) {
    const { rows } = await sql<TouchedVisitor>`${sql.raw(PREPARE + PLAIN_POSTGRES)}
      SELECT v.org_id, v.core_id, v.person_id, v.corex_id, v.corex_id AS old_corex_id, false AS inserted
      FROM ${visitorsByKey(rest)}
    `.execute(tx);
    return rows;
  }
  const orgIds = [...new Set(rest.map((r) => r.orgId))];
  const coreIds = [...new Set(rest.map((r) => r.coreId))];
  const { rows: read } = await sql<TouchedVisitor>`${sql.raw(PREPARE)}
    SELECT v.org_id, v.core_id, v.person_id, v.corex_id, v.corex_id AS old_corex_id, false AS inserted
    FROM visitors v
    WHERE v.org_id = ANY(${orgIds}::bigint[]) AND v.core_id = ANY(${coreIds}::text[])
  `.execute(tx);
  if (orgIds.length === 1) return read;
  const wanted = new Set(rest.map((r) => visitorKey(r.orgId, r.coreId)));
  return read.filter((r) => wanted.has(visitorKey(r.org_id, r.core_id)));
}

/** Persons (other than `person`) that have a visitor with this corex_id. */
export async function personsSharingCorex(tx: Executor, orgId: OrgId, corexId: string, person: number): Promise<number[]> {
  const rows = await orgScoped(tx, orgId)
    .selectFrom('visitors')
    .select('person_id')
    .distinct()
    .where('corex_id', '=', corexId)
    .where('person_id', '<>', person)
    .execute();
  return rows.map((r) => r.person_id);
}

export interface IdentifiedContact {
  id: number;
  type: 'EMAIL' | 'PHONE';
  value: string;
  /** the person the contact belongs to (the visitor's, unless it was known before) */
  person_id: number;
  /** the link between this visitor and the contact is new */
  linked: boolean;
  /** this identify verified the link (its hash covers the contact) */
  verified: boolean;
}

/**
 * One identify, in one statement: the contacts (created for `person` when
 * new) and the visitor's links to them (a verified one upgrades an existing
 * unverified link, which does not count as new). The name it gave went with
 * the batch's visitor upsert (VisitorTouch.name): nothing in the batch reads
 * it, and one write of the visitor row costs less than two.
 */
export async function identifyContacts(
  tx: Executor,
  orgId: OrgId,
  coreId: string,
  person: number,
  contacts: { type: 'EMAIL' | 'PHONE'; value: string; verified: boolean }[],
): Promise<IdentifiedContact[]> {
  const input = JSON.stringify(contacts.map((c, ord) => ({ type: c.type, value: c.value, verified: c.verified, ord })));
  // contacts: DO UPDATE (a no-op) rather than DO NOTHING so an existing row is returned and locked
  const { rows } = await sql<IdentifiedContact>`${sql.raw(PREPARE)}
    WITH input AS (
      SELECT * FROM jsonb_to_recordset(${input}::jsonb) AS x(type text, value text, verified boolean, ord int)
    ),
    c AS (
      INSERT INTO contacts AS k (org_id, type, value, person_id)
      SELECT ${orgId}::bigint, type, value, ${person}::bigint FROM input ORDER BY ord
      ON CONFLICT (org_id, type, value) DO UPDATE SET person_id = k.person_id
      RETURNING k.id, k.type, k.value, k.person_id
    ),
    l AS (
      INSERT INTO visitor_contacts AS vc (org_id, core_id, contact_id, verified)
      SELECT ${orgId}::bigint, ${coreId}::text, c.id, i.verified
      FROM c JOIN input i ON i.type = c.type AND i.value = c.value
      ON CONFLICT (org_id, core_id, contact_id) DO UPDATE SET verified = true
      WHERE EXCLUDED.verified AND NOT vc.verified
      RETURNING vc.contact_id, (xmax = 0) AS inserted
    )
    SELECT c.id, c.type, c.value, c.person_id,
      EXISTS (SELECT 1 FROM l WHERE l.contact_id = c.id AND l.inserted) AS linked,
      i.verified
    FROM c JOIN input i ON i.type = c.type AND i.value = c.value
  `.execute(tx);
  const order = new Map(contacts.map((c, i) => [`${c.type}:${c.value}`, i]));
  return rows.sort((a, b) => order.get(`${a.type}:${a.value}`)! - order.get(`${b.type}:${b.value}`)!);
}

/** An identify of a batch sent together with others (its visitor and contacts meet no other identify of the batch). */
export interface IdentifyRow {
  coreId: string;
  person: number;
  contacts: { type: 'EMAIL' | 'PHONE'; value: string; verified: boolean }[];
}

/**
 * The CTEs `c` and `l` both identify statements end with (this file's
 * identifyContactsTogether, identify-upsert.repository.ts): the contacts
 * upsert (a contact keeps its person; `created` tells a new one) and the
 * links of the identifies' visitors to them (verified once any identify
 * verified it). `source` selects (org_id, type, value, person_id) in (type,
 * value) order, the lock order across batches; the links read the
 * statement's `input` (core_id, type, value, verified).
 */
export function contactsThenLinks(orgId: OrgId, source: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`c AS (
      INSERT INTO contacts AS k (org_id, type, value, person_id)
      ${source}
      ON CONFLICT (org_id, type, value) DO UPDATE SET person_id = k.person_id
      RETURNING k.id, k.type, k.value, k.person_id, (xmax = 0) AS created
    ),
    l AS (
      INSERT INTO visitor_contacts AS vc (org_id, core_id, contact_id, verified)
      SELECT ${orgId}::bigint, i.core_id, c.id, i.verified
      FROM c JOIN input i ON i.type = c.type AND i.value = c.value
      ON CONFLICT (org_id, core_id, contact_id) DO UPDATE SET verified = true
      WHERE EXCLUDED.verified AND NOT vc.verified
      RETURNING vc.core_id, vc.contact_id, (xmax = 0) AS inserted
    )`;
}

/**
 * identifyContacts for many identifies of one organisation in one statement:
 * no two of them share a visitor or a contact (the caller checks), so each
 * row's outcome is what its own statement would have given. Contacts are
 * inserted (and locked) in (type, value) order, a stable order across
 * concurrent batches. Returns each identify's contacts in its claim's order.
 */
export async function identifyContactsTogether(
  tx: Executor,
  orgId: OrgId,
  rows: IdentifyRow[],
): Promise<Map<string, (IdentifiedContact & { created: boolean })[]>> {
  const input = JSON.stringify(
    rows.flatMap((r) => r.contacts.map((c) => ({ core_id: r.coreId, person_id: r.person, type: c.type, value: c.value, verified: c.verified }))),
  );
  const { rows: out } = await sql<IdentifiedContact & { core_id: string; created: boolean }>`${sql.raw(PREPARE)}
    WITH input AS (
      SELECT * FROM jsonb_to_recordset(${input}::jsonb) AS x(core_id text, person_id bigint, type text, value text, verified boolean)
    ),
    ${contactsThenLinks(orgId, sql`SELECT ${orgId}::bigint, type, value, person_id FROM input ORDER BY type, value`)}
    SELECT i.core_id, c.id, c.type, c.value, c.person_id, c.created,
      EXISTS (SELECT 1 FROM l WHERE l.core_id = i.core_id AND l.contact_id = c.id AND l.inserted) AS linked,
      i.verified
    FROM c JOIN input i ON i.type = c.type AND i.value = c.value
  `.execute(tx);
  const byVisitor = new Map<string, (IdentifiedContact & { created: boolean })[]>();
  for (const { core_id, ...contact } of out) {
    const list = byVisitor.get(core_id);
    if (list) list.push(contact);
    else byVisitor.set(core_id, [contact]);
  }
  // the claim's order (EMAIL before PHONE, as identifyContacts returns them)
  for (const r of rows) {
    if (r.contacts.length < 2) continue;
    const order = new Map(r.contacts.map((c, i) => [`${c.type}:${c.value}`, i]));
    byVisitor.get(r.coreId)?.sort((a, b) => order.get(`${a.type}:${a.value}`)! - order.get(`${b.type}:${b.value}`)!);
  }
  return byVisitor;
}

export interface PersonProfile {
  id: number;
  last_view: RecentView[];
  last_cart_product_id: number | null;
  last_cart_url: string | null;
  last_cart_at: Date | null;
}

export async function lockPersons(tx: Executor, orgId: OrgId, ids: number[]): Promise<PersonProfile[]> {
  return orgScoped(tx, orgId)
    .selectFrom('persons')
    .select(['id', 'last_view', 'last_cart_product_id', 'last_cart_url', 'last_cart_at'])
    .where('id', 'in', ids)
    .forUpdate()
    .execute();
}

/** Moves every visitor and contact of `gone` to `keep`, stores the merged profile, deletes `gone`. */
export async function mergePersons(tx: Executor, orgId: OrgId, keep: number, gone: number, merged: Omit<PersonProfile, 'id'>) {
  await orgScoped(tx, orgId).updateTable('visitors').set({ person_id: keep }).where('person_id', '=', gone).execute();
  await orgScoped(tx, orgId).updateTable('contacts').set({ person_id: keep }).where('person_id', '=', gone).execute();
  await orgScoped(tx, orgId).deleteFrom('persons').where('id', '=', gone).execute();
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

export interface ProfileChange {
  orgId: OrgId;
  person: number;
  /** views recorded by this batch, most recent first, distinct, at most 3 */
  views: RecentView[];
  /** cartUrl is null when the cart page's URL is outside the allowed domains */
  cart: { productId: number; cartUrl: string | null; at: Date } | null;
}

/** Applies a batch's profile changes, one row per person (callers dedupe). */
export async function upsertProfiles(tx: Executor, changes: ProfileChange[]): Promise<void> {
  if (changes.length === 0) return;
  const data = JSON.stringify(
    changes.map((c) => ({
      org_id: c.orgId,
      id: c.person,
      last_view: c.views,
      last_cart_product_id: c.cart?.productId ?? null,
      last_cart_url: c.cart?.cartUrl ?? null,
      last_cart_at: c.cart?.at ?? null,
    })),
  );
  await sql`${sql.raw(PREPARE)}
    INSERT INTO persons AS p (org_id, id, last_view, last_cart_product_id, last_cart_url, last_cart_at)
    SELECT * FROM jsonb_to_recordset(${data}::jsonb) AS x(
      org_id bigint, id bigint, last_view jsonb, last_cart_product_id bigint, last_cart_url text, last_cart_at timestamptz)
    ${PROFILE_ONTO_PERSON}
  `.execute(tx);
}

/**
 * How a batch's profile row (views most recent first, a cart or none) goes
 * onto a stored person `p`: its views before the stored ones, its cart over
 * the stored one when it has one. The ON CONFLICT of both profile writes
 * (upsertProfiles, and the one-statement batch's profile-upsert.repository.ts).
 */
export const PROFILE_ONTO_PERSON = sql`ON CONFLICT (org_id, id) DO UPDATE SET
      last_view = trackway_prepend_views(EXCLUDED.last_view, p.last_view),
      last_cart_product_id = CASE WHEN EXCLUDED.last_cart_at IS NULL THEN p.last_cart_product_id ELSE EXCLUDED.last_cart_product_id END,
      last_cart_url = CASE WHEN EXCLUDED.last_cart_at IS NULL THEN p.last_cart_url ELSE EXCLUDED.last_cart_url END,
      last_cart_at = COALESCE(EXCLUDED.last_cart_at, p.last_cart_at)`;

export interface ProductSighting {
  orgId: OrgId;
  productId: number;
  url: string;
  at: Date;
}

/** Remembers the latest URL seen for each product (one row per product; callers dedupe). */
export async function rememberProductUrls(tx: Executor, rows: ProductSighting[]): Promise<void> {
  if (rows.length === 0) return;
  await sql`${sql.raw(PREPARE)}
    ${productsUpsert(rows)}
  `.execute(tx);
}

/** The catalogue's upsert (a later sighting wins), as a statement or a CTE body (the one-statement batch's). */
export function productsUpsert(rows: readonly ProductSighting[]): RawBuilder<unknown> {
  const data = JSON.stringify(rows.map((r) => ({ org_id: r.orgId, product_id: r.productId, url: r.url, seen_at: isoTimestamp(r.at) })));
  return sql`INSERT INTO products AS p (org_id, product_id, url, seen_at)
    SELECT * FROM jsonb_to_recordset(${data}::jsonb) AS x(org_id bigint, product_id bigint, url text, seen_at timestamptz)
    ON CONFLICT (org_id, product_id) DO UPDATE SET url = EXCLUDED.url, seen_at = EXCLUDED.seen_at
    WHERE p.seen_at <= EXCLUDED.seen_at`;
}

export async function productUrl(tx: Executor, orgId: OrgId, productId: number): Promise<string | undefined> {
  const row = await orgScoped(tx, orgId).selectFrom('products').select('url').where('product_id', '=', productId).executeTakeFirst();
  return row?.url;
}

export async function personProfile(tx: Executor, orgId: OrgId, person: number): Promise<PersonProfile | undefined> {
  return orgScoped(tx, orgId)
    .selectFrom('persons')
    .select(['id', 'last_view', 'last_cart_product_id', 'last_cart_url', 'last_cart_at'])
    .where('id', '=', person)
    .executeTakeFirst();
}
