// Identity's profile writes as CTEs for the one-statement batch
// (src/tracking/plain-batch.repository.ts): the persons' recent views and
// cart, and the product URL catalogue, written in the statement that touches
// the visitors and inserts the events. Each area builds its own part (as
// visitors-upsert.repository.ts; docs/architecture.md says why).
//
// The person of a visitor must be its person under the visitor's row lock
// (a merge committed by another batch after this statement's snapshot moves
// it), which is what upsertVisitors reads in a statement after its upsert.
// In one statement no read of `visitors` would do: it sees the statement's
// snapshot, and its plan depends on the planner's view of the table
// (BENCHMARKS.md, "Issue 24 steps"). So the person comes from RETURNING:
// with marks, the statement's visitors upsert (`touched`) holds the
// visitors it would leave unwritten (visitorsUpsert's `hold`: rewritten
// with their own values, a HOT update), so it returns every visitor of the
// batch, each with its person_id as of its latest version, under the lock
// ON CONFLICT took. That rewrite is a lock record and a HOT update of each
// marked visitor (docs/profiles/updatecart-returning-plans.md), so on plain
// PostgreSQL a marked visitor the process knows to be fresh and unchanged
// (FreshVisitors.toSend) is not sent to the upsert: the statement reads its
// person with a share lock instead (`held`: FOR SHARE, a key probe per
// visitor), which waits for a merge that holds the row and then returns its
// latest version, as the upsert's lock would. Such a visitor was written by
// this process, so it exists in the statement's snapshot (unless an erasure
// deleted it since: then its mark finds no person and is dropped with it,
// its events stored as the fresh visitors' comment says). Under Citus a
// locking read must name one organisation, and a batch may span several:
// there every marked visitor is sent. Either way every mark finds its person
// in `touched` or `held`.
//
// The persons upsert takes upsertProfiles' conflict rule
// (PROFILE_ONTO_PERSON) and the products upsert is rememberProductUrls'
// (productsUpsert; both in identity.repository.ts), with the per-person
// accumulation Stitching does in memory (views most recent first, distinct,
// at most 3; the last cart) done here, by `seq`, the events' order in the
// batch (test/tracking/plain-batch.test.ts holds the two paths equal).
import { sql } from 'kysely';
import type { Executor } from '../db/tenancy.ts';
import { isoTimestampOrNull } from '../db/timestamps.ts';
import { PROFILE_ONTO_PERSON, type ProductSighting, productsUpsert, visitorsAreDistributed, visitorsByKey } from './identity.repository.ts';
import type { ProfileMark } from './recorded.rules.ts';
import type { VisitorTouch } from './visitors-upsert.repository.ts';

/** Whether a batch may read its fresh marked visitors' persons with a share lock (`held`): on plain PostgreSQL only (above). */
export async function holdsByRead(db: Executor): Promise<boolean> {
  return !(await visitorsAreDistributed(db));
}

/**
 * The CTEs (each `name AS (…)`, comma-separated, no leading or trailing
 * comma) that write a batch's marks and products. With marks, the statement
 * must name its visitors upsert `touched`, made with `hold` when a marked
 * visitor is among its rows, and end it with
 * `RETURNING v.org_id, v.core_id, v.person_id`; every marked visitor is
 * either among its rows or in `held` (read here with a share lock: only
 * where holdsByRead says so, and the statement then starts with
 * PLAIN_POSTGRES). Null when there is nothing to write.
 */
export function profileWrites(marks: readonly ProfileMark[], products: readonly ProductSighting[], held: readonly VisitorTouch[] = []) {
  const parts = [];
  if (held.length > 0) parts.push(sql`held AS (SELECT v.org_id, v.core_id, v.person_id FROM ${visitorsByKey(held, 'FOR SHARE')})`);
  if (marks.length > 0) {
    const data = JSON.stringify(
      marks.map((m) => ({
        org_id: m.orgId,
        core_id: m.coreId,
        seq: m.seq,
        url: m.view?.url ?? null,
        view_at: m.view?.at ?? null,
        product_id: m.cart?.productId ?? null,
        cart_url: m.cart?.cartUrl ?? null,
        cart_at: isoTimestampOrNull(m.cart?.at),
      })),
    );
    parts.push(sql`marks AS (
      SELECT p.org_id, p.person_id, m.seq, m.url, m.view_at, m.product_id, m.cart_url, m.cart_at
      FROM jsonb_to_recordset(${data}::jsonb) AS m(
        org_id bigint, core_id text, seq int, url text, view_at text, product_id bigint, cart_url text, cart_at timestamptz)
      JOIN ${held.length > 0 ? sql`(SELECT org_id, core_id, person_id FROM touched UNION ALL SELECT org_id, core_id, person_id FROM held)` : sql`touched`} p
        ON p.org_id = m.org_id AND p.core_id = m.core_id
    ),
    views AS (
      SELECT org_id, person_id, jsonb_agg(jsonb_build_object('url', url, 'at', view_at) ORDER BY seq DESC) AS last_view
      FROM (
        SELECT org_id, person_id, url, view_at, seq, row_number() OVER (PARTITION BY org_id, person_id ORDER BY seq DESC) AS n
        FROM (
          SELECT DISTINCT ON (org_id, person_id, url) org_id, person_id, url, view_at, seq
          FROM marks WHERE url IS NOT NULL ORDER BY org_id, person_id, url, seq DESC
        ) latest
      ) ranked
      WHERE n <= 3
      GROUP BY org_id, person_id
    ),
    carts AS (
      SELECT DISTINCT ON (org_id, person_id) org_id, person_id, product_id, cart_url, cart_at
      FROM marks WHERE cart_at IS NOT NULL ORDER BY org_id, person_id, seq DESC
    ),
    profiled AS (
      INSERT INTO persons AS p (org_id, id, last_view, last_cart_product_id, last_cart_url, last_cart_at)
      SELECT k.org_id, k.person_id, COALESCE(w.last_view, '[]'::jsonb), c.product_id, c.cart_url, c.cart_at
      FROM (SELECT DISTINCT org_id, person_id FROM marks) k
      LEFT JOIN views w ON w.org_id = k.org_id AND w.person_id = k.person_id
      LEFT JOIN carts c ON c.org_id = k.org_id AND c.person_id = k.person_id
      ORDER BY k.org_id, k.person_id
      ${PROFILE_ONTO_PERSON}
    )`);
  }
  if (products.length > 0) parts.push(sql`catalogued AS (${productsUpsert(products)})`);
  return parts.length === 0 ? null : sql.join(parts, sql`,\n`);
}
