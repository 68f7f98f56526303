// The events of given visitors, for privacy requests (src/privacy/): read in
// pages for an export, their product sightings, and deleted in bounded
// batches by an erasure (each batch its own short transaction, so ingest,
// which only inserts, is never held up). Every statement names its
// organisation and reaches the events through events_visitor
// (org_id, core_id, received_at, id) in every partition.
import { sql } from 'kysely';
import type { Executor, Tx, OrgId } from '../db/tenancy.ts';

export interface VisitorEvent {
  id: number;
  name: string;
  core_id: string;
  roaming_id: string;
  corex_id: string | null;
  received_at: Date;
  body: Record<string, unknown>;
}

/** The visitors' events, oldest first, after (received_at, id) `after` when given. */
export async function eventsOfVisitors(
  db: Executor,
  orgId: OrgId,
  coreIds: readonly string[],
  after: [Date, number] | undefined,
  limit: number,
): Promise<VisitorEvent[]> {
  if (coreIds.length === 0) return [];
  const [at, id] = after ?? [new Date(0), 0];
  const { rows } = await sql<VisitorEvent>`
    SELECT e.id, e.name, e.core_id, e.roaming_id, e.corex_id, e.received_at, e.body
    FROM events e
    WHERE e.org_id = ${orgId}::bigint AND e.core_id = ANY(${coreIds}::text[])
      AND (e.received_at, e.id) > (${at}::timestamptz, ${id}::bigint)
    ORDER BY e.received_at, e.id
    LIMIT ${limit}::int
  `.execute(db);
  return rows;
}

/**
 * The product URLs the visitors' events could have put in the product
 * catalogue (productview's product_url, the items of checkout and buy), each
 * (product, url) once. One read of their events; nothing is locked.
 */
export async function productSightingsOfVisitors(
  db: Executor,
  orgId: OrgId,
  coreIds: readonly string[],
): Promise<{ productId: number; url: string }[]> {
  if (coreIds.length === 0) return [];
  const { rows } = await sql<{ product_id: string; url: string }>`
    SELECT DISTINCT s.product_id, s.url FROM (
      SELECT e.body ->> 'product_id' AS product_id, e.body ->> 'product_url' AS url
      FROM events e
      WHERE e.org_id = ${orgId}::bigint AND e.core_id = ANY(${coreIds}::text[]) AND e.name = 'productview'
      UNION ALL
      SELECT i ->> 'product_id', i ->> 'product_url'
      FROM events e CROSS JOIN LATERAL jsonb_array_elements(
        CASE WHEN jsonb_typeof(e.body -> 'items') = 'array' THEN e.body -> 'items' ELSE '[]'::jsonb END) AS i
      WHERE e.org_id = ${orgId}::bigint AND e.core_id = ANY(${coreIds}::text[]) AND e.name IN ('checkout', 'buy')
    ) s
    WHERE s.product_id ~ '^[0-9]{1,15}$' AND s.url IS NOT NULL
  `.execute(db);
  return rows.map((r) => ({ productId: Number(r.product_id), url: r.url }));
}

/** Deletes up to `limit` events of the visitors (in every partition; all of them without a limit); how many. */
export async function deleteEventsOfVisitors(tx: Tx, orgId: OrgId, coreIds: readonly string[], limit?: number): Promise<number> {
  if (coreIds.length === 0) return 0;
  const r = await sql`
    DELETE FROM events e
    USING (
      SELECT x.received_at, x.id FROM events x
      WHERE x.org_id = ${orgId}::bigint AND x.core_id = ANY(${coreIds}::text[])
      ${limit === undefined ? sql`` : sql`LIMIT ${limit}::int`}
    ) doomed
    WHERE e.org_id = ${orgId}::bigint AND e.received_at = doomed.received_at AND e.id = doomed.id
  `.execute(tx);
  return Number(r.numAffectedRows ?? 0);
}
