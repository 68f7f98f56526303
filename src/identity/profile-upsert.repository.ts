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
// ON CONFLICT took. The plain batch sends every marked visitor to the upsert
// (FreshVisitors.toSend), so every mark finds its person in `touched`.
//
// The persons upsert takes upsertProfiles' conflict rule
// (PROFILE_ONTO_PERSON) and the products upsert is rememberProductUrls'
// (productsUpsert; both in identity.repository.ts), with the per-person
// accumulation Stitching does in memory (views most recent first, distinct,
// at most 3; the last cart) done here, by `seq`, the events' order in the
// batch (test/tracking/plain-batch.test.ts holds the two paths equal).
import { sql } from 'kysely';
import { isoTimestampOrNull } from '../db/timestamps.ts';
import { PROFILE_ONTO_PERSON, type ProductSighting, productsUpsert } from './identity.repository.ts';
import type { ProfileMark } from './recorded.rules.ts';

/**
 * The CTEs (each `name AS (…)`, comma-separated, no leading or trailing
 * comma) that write a batch's marks and products. With marks, the statement
 * must name its visitors upsert `touched`, made with `hold` and every marked
 * visitor among its rows, and end it with
 * `RETURNING v.org_id, v.core_id, v.person_id`. Null when there is nothing
 * to write.
 */
export function profileWrites(marks: readonly ProfileMark[], products: readonly ProductSighting[]) {
  const parts = [];
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
      JOIN touched p ON p.org_id = m.org_id AND p.core_id = m.core_id
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
