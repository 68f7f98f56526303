// The events table (monthly partitions by received_at): written in batches,
// read newest first by organisation, optionally by visitor and name.
import { type RawBuilder, sql } from 'kysely';
import { type Database, PREPARE } from '../db/database.ts';
import { isoTimestamp } from '../db/timestamps.ts';
import { type Executor, orgScoped, type OrgId } from '../db/tenancy.ts';

export interface NewEvent {
  orgId: OrgId;
  receivedAt: Date;
  name: string;
  coreId: string;
  roamingId: string;
  corexId: string | null;
  body: Record<string, unknown>;
}

/** The events as one jsonb parameter: the bodies are serialised once, here (with their ids, when drawn ahead: EventIds). */
function eventsJson(rows: readonly NewEvent[], ids?: readonly number[]): string {
  return JSON.stringify(
    rows.map((r, i) => ({
      // undefined without ids: JSON.stringify leaves it out
      id: ids?.[i],
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
 * statement to carry (one round trip less). `ids`, in the order of `rows`:
 * drawn ahead by EventIds, when the batch needs them (its event exports);
 * without them, each row takes the next of the sequence.
 */
export function eventsInsert(rows: readonly NewEvent[], ids?: readonly number[]): RawBuilder<unknown> {
  const id = sql.raw(ids ? 'id, ' : '');
  const idType = sql.raw(ids ? 'id bigint, ' : '');
  return sql`INSERT INTO events (${id}org_id, received_at, name, core_id, roaming_id, corex_id, body)
      SELECT * FROM jsonb_to_recordset(${eventsJson(rows, ids)}::jsonb) AS r(
        ${idType}org_id bigint, received_at timestamptz, name text, core_id text, roaming_id text, corex_id text, body jsonb)`;
}

/** How many event ids EventIds draws from the sequence at once. */
const EVENT_ID_BLOCK = 1000;

/**
 * Event ids drawn from events_id_seq ahead of the batches that need them (a
 * batch whose events are exported: each export names its event's id), a
 * block at a time, so that such a batch's events insert can travel with its
 * visitors upsert as every other batch's does, instead of being a statement
 * of its own ahead of it: one round trip per batch less. One per process and
 * database. A sequence is not transactional: ids drawn by a batch that then
 * fails, or left when the process stops, are never used (gaps, as a
 * rollback leaves them in any sequence); no id is used twice. Ids are unique,
 * not ordered by commit (they never were: the sequence hands them out before
 * the commits, in any order); events are listed by received_at, then id.
 */
export class EventIds {
  private stock: number[] = [];
  private next = 0;
  private refill: Promise<void> | undefined;

  constructor(private readonly block = EVENT_ID_BLOCK) {}

  /** `n` ids not used before, drawing a block (at least `n`) from the sequence when the stock is short. */
  async take(db: Executor, n: number): Promise<number[]> {
    while (this.stock.length - this.next < n) {
      this.refill ??= this.draw(db, Math.max(this.block, n)).finally(() => (this.refill = undefined));
      await this.refill;
    }
    const ids = this.stock.slice(this.next, this.next + n);
    this.next += n;
    return ids;
  }

  private async draw(db: Executor, count: number): Promise<void> {
    const { rows } = await sql<{ ids: string[] }>`${sql.raw(PREPARE)}
      SELECT array_agg(nextval('events_id_seq')) AS ids FROM generate_series(1, ${count}::int)
    `.execute(db);
    this.stock = this.stock.slice(this.next).concat(rows[0]!.ids.map(Number));
    this.next = 0;
  }
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
