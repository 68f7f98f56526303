// The events table (monthly partitions by received_at): written in batches,
// read newest first by organisation, optionally by visitor and name.
import { type RawBuilder, type Transaction, sql } from 'kysely';
import { type Database, PREPARE } from '../db/database.ts';
import type { DB } from '../db/schema.ts';
import { isoTimestamp } from '../db/timestamps.ts';
import { orgScoped, type OrgId } from '../db/tenancy.ts';

export interface NewEvent {
  orgId: OrgId;
  receivedAt: Date;
  name: string;
  coreId: string;
  roamingId: string;
  corexId: string | null;
  body: Record<string, unknown>;
}

/** The events as one jsonb parameter: the bodies are serialised once, here. */
function eventsJson(rows: readonly NewEvent[]): string {
  return JSON.stringify(
    rows.map((r) => ({
      org_id: r.orgId,
      received_at: isoTimestamp(r.receivedAt),
      name: r.name,
      core_id: r.coreId,
      roaming_id: r.roamingId,
      corex_id: r.corexId,
      body: r.body,
    })),
  );
}

/**
 * The insert of the events, as a data-modifying CTE body for another batch
 * statement to carry (one round trip less) when their ids are not needed.
 */
export function eventsInsert(rows: readonly NewEvent[]): RawBuilder<unknown> {
  return sql`INSERT INTO events (org_id, received_at, name, core_id, roaming_id, corex_id, body)
      SELECT * FROM jsonb_to_recordset(${eventsJson(rows)}::jsonb) AS r(
        org_id bigint, received_at timestamptz, name text, core_id text, roaming_id text, corex_id text, body jsonb)`;
}

/** Inserts the events; returns their ids, in the order of `rows` (webhook exports carry them). */
export async function insertEvents(tx: Transaction<DB>, rows: NewEvent[]): Promise<number[]> {
  if (rows.length === 0) return [];
  const data = eventsJson(rows);
  // ids are drawn in the CTE (nextval makes it materialise once), so they can
  // be returned in the input's order, which INSERT ... RETURNING does not promise
  const { rows: ids } = await sql<{ id: string }>`${sql.raw(PREPARE)}
    WITH x AS (
      SELECT nextval('events_id_seq') AS id, r.*
      FROM ROWS FROM (jsonb_to_recordset(${data}::jsonb) AS (
        org_id bigint, received_at timestamptz, name text, core_id text, roaming_id text, corex_id text, body jsonb))
        WITH ORDINALITY AS r(org_id, received_at, name, core_id, roaming_id, corex_id, body, ord)
    ), ins AS (
      INSERT INTO events (id, org_id, received_at, name, core_id, roaming_id, corex_id, body)
      SELECT id, org_id, received_at, name, core_id, roaming_id, corex_id, body FROM x
    )
    SELECT id FROM x ORDER BY ord
  `.execute(tx);
  return ids.map((r) => Number(r.id));
}

export interface EventQuery {
  orgId: OrgId;
  coreId?: string;
  name?: string;
  /** [received_at ISO, id] of the last item of the previous page */
  after?: [string, number];
  limit: number;
}

export async function listEvents(db: Database, q: EventQuery) {
  let query = orgScoped(db, q.orgId).selectFrom('events').select(['id', 'name', 'core_id', 'roaming_id', 'corex_id', 'received_at', 'body']);
  if (q.coreId !== undefined) query = query.where('core_id', '=', q.coreId);
  if (q.name !== undefined) query = query.where('name', '=', q.name);
  if (q.after) {
    const [at, id] = q.after;
    query = query.where(sql<boolean>`(received_at, id) < (${at}::timestamptz, ${id}::bigint)`);
  }
  return query
    .orderBy('received_at', 'desc')
    .orderBy('id', 'desc')
    .limit(q.limit + 1)
    .execute();
}
