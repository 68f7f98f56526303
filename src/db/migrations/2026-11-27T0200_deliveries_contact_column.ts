// Two index entries less per row version of a delivery, and no JSON parse
// (issue 24). A delivery's row is written three times (its insert, the
// claim, the outcome), and the claim and the outcome are not HOT updates (the
// claim moves next_attempt_at, the outcome status), so every index of
// `deliveries` takes a new entry each time:
// - deliveries_contact indexed an expression, (body::jsonb) ->> 'contact':
//   PostgreSQL parsed the whole body as jsonb for each of those entries. The
//   contact is now a column, `contact`, written with the delivery by the
//   outbox (the fan-out knows it) and read by the privacy requests
//   (src/webhooks/person-deliveries.repository.ts); erasure notices have none
//   (they are found by kind, never by contact).
// - deliveries_org (org_id, id DESC) was the primary key (org_id, id) read
//   backwards: the list of deliveries (newest first, keyset on id) reads the
//   primary key the same way.
// Measured on PostgreSQL 15 (BENCHMARKS.md, "Issue 24, 27 November (third
// stop)"): a claim and an outcome per delivery, 39.3–40.2 µs -> 28.0–28.6 µs.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE deliveries ADD COLUMN contact text;
    UPDATE deliveries SET contact = (body::jsonb) ->> 'contact' WHERE kind IN ('matched', 'event');
    DROP INDEX deliveries_contact;
    CREATE INDEX deliveries_contact ON deliveries (org_id, contact);
    DROP INDEX deliveries_org;
  `.execute(db);
}
