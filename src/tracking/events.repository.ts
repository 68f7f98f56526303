// The events table (monthly partitions by received_at): written in batches,
// read newest first by organisation, optionally by visitor and name.
import { type Transaction, sql } from 'kysely';
import { type Database, PREPARE } from '../db/database.ts';
import type { DB } from '../db/schema.ts';
import { orgScoped } from '../db/tenancy.ts';

export interface NewEvent {
  orgId: number;
  receivedAt: Date;
  name: string;
  coreId: string;
  roamingId: string;
  corexId: string | null;
  body: Record<string, unknown>;
}

export async function insertEvents(tx: Transaction<DB>, rows: NewEvent[]): Promise<void> {
  if (rows.length === 0) return;
  // one jsonb parameter for the whole batch: the bodies are serialised once, here
  const data = JSON.stringify(
    rows.map((r) => ({
      org_id: r.orgId,
      received_at: r.receivedAt,
      name: r.name,
      core_id: r.coreId,
      roaming_id: r.roamingId,
      corex_id: r.corexId,
      body: r.body,
    })),
  );
  await sql`${sql.raw(PREPARE)}
    INSERT INTO events (org_id, received_at, name, core_id, roaming_id, corex_id, body)
    SELECT * FROM jsonb_to_recordset(${data}::jsonb) AS x(
      org_id bigint, received_at timestamptz, name text, core_id text, roaming_id text, corex_id text, body jsonb)
  `.execute(tx);
}

export interface EventQuery {
  orgId: number;
  coreId?: string;
  name?: string;
  /** [received_at ISO, id] of the last item of the previous page */
  after?: [string, number];
  limit: number;
}

export async function listEvents(db: Database, q: EventQuery) {
  let query = orgScoped(db, q.orgId)
    .selectFrom('events')
    .select(['id', 'name', 'core_id', 'roaming_id', 'corex_id', 'received_at', 'body']);
  if (q.coreId !== undefined) query = query.where('core_id', '=', q.coreId);
  if (q.name !== undefined) query = query.where('name', '=', q.name);
  if (q.after) {
    const [at, id] = q.after;
    query = query.where(sql<boolean>`(received_at, id) < (${at}::timestamptz, ${id}::bigint)`);
  }
  return query.orderBy('received_at', 'desc').orderBy('id', 'desc').limit(q.limit + 1).execute();
}
