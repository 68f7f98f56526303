// A claim's lease in a column of its own (issue 24: "one write per attempt").
// The claim wrote its lease into next_attempt_at, a column of both partial
// indexes of pending deliveries (deliveries_due, deliveries_pending_org), so
// its update was not HOT: each claim put a new entry into all four indexes
// of `deliveries` (about 330 B of WAL a delivery, BENCHMARKS.md eighteenth
// stop). The lease now goes into `lease_until`, which no index holds, and the
// claim changes nothing else but `attempts_count`: with half of each page free
// (2026-11-28T0100) it is a HOT update, the indexes untouched.
//
// A pending delivery is due when next_attempt_at has passed and it holds no
// lease that has not (src/webhooks/claims.repository.ts); the outcome clears
// the lease, and a claim given back clears it. A row claimed before this
// migration carries its lease in next_attempt_at, as before, and is due once
// that passes. A dispatcher of an earlier version does not read lease_until:
// stop every dispatcher of the earlier version before this one claims (the
// README's "Upgrading"), or one of them may send again what this one has in
// flight (receivers dedupe by webhook-id, but it is a second request).
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE deliveries ADD COLUMN lease_until timestamptz`.execute(db);
}
