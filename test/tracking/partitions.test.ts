import { expect } from 'chai';
import { sql } from 'kysely';
import { maintainEventPartitions } from '../../src/tracking/partitions.worker.ts';
import { freshDatabase, type TestDatabase } from '../support/harness.ts';
import { testOrgId } from '../support/org-id.ts';

describe('events: monthly partitions and retention', () => {
  let database: TestDatabase;
  before(async () => {
    database = await freshDatabase();
  });
  after(() => database.drop());

  const partitions = async () =>
    (
      await sql<{ name: string }>`
        SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'events'::regclass ORDER BY 1`.execute(database.handle.db)
    ).rows.map((r) => r.name);

  const month = (offset: number) => {
    const d = new Date();
    d.setUTCDate(1);
    d.setUTCMonth(d.getUTCMonth() + offset);
    return `events_${d.getUTCFullYear()}_${String(d.getUTCMonth() + 1).padStart(2, '0')}`;
  };

  it('keeps this month and two ahead', async () => {
    await maintainEventPartitions(database.handle.db, undefined);
    expect(await partitions()).to.include.members([month(0), month(1), month(2)]);
  });

  it('drops whole partitions older than EVENT_RETENTION_DAYS, and only those', async () => {
    const db = database.handle.db;
    const old = new Date();
    old.setUTCMonth(old.getUTCMonth() - 14);
    const from = new Date(Date.UTC(old.getUTCFullYear(), old.getUTCMonth(), 1));
    const to = new Date(Date.UTC(old.getUTCFullYear(), old.getUTCMonth() + 1, 1));
    const name = `events_${from.getUTCFullYear()}_${String(from.getUTCMonth() + 1).padStart(2, '0')}`;
    await sql`CREATE TABLE ${sql.id(name)} PARTITION OF events FOR VALUES FROM (${sql.lit(from.toISOString())}) TO (${sql.lit(to.toISOString())})`.execute(
      db,
    );
    await db
      .insertInto('events')
      .values({ org_id: testOrgId(1), received_at: from, name: 'view', core_id: 'c', roaming_id: 'r', corex_id: null, body: '{}' })
      .execute();
    await db
      .insertInto('events')
      .values({ org_id: testOrgId(1), received_at: new Date(), name: 'view', core_id: 'c', roaming_id: 'r', corex_id: null, body: '{}' })
      .execute();
    const kept = await maintainEventPartitions(db, 500); // the partition ended about 14 months ago
    expect(kept.dropped).to.deep.equal([]);
    const r = await maintainEventPartitions(db, 365);
    expect(r.dropped).to.deep.equal([name]);
    expect(await partitions()).to.not.include(name);
    const left = await db.selectFrom('events').select('received_at').execute();
    expect(left).to.have.length(1); // this month's event is untouched
  });
});
