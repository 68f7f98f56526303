// The bench's WAL probe (scripts/bench-wal.ts) on a real PostgreSQL: the WAL
// between two positions, per one of n, split by relation where the server
// has pg_get_wal_block_info (16 and later), with the reason where it has not.
// The dispatch scenario splits its last round's WAL this way.
import { expect } from 'chai';
import pg from 'pg';
import { openWalProbe } from '../../scripts/bench-wal.ts';
import { type TestDatabase, freshDatabase } from '../support/harness.ts';

describe('bench WAL probe', function () {
  this.timeout(30_000);
  let db: TestDatabase;
  before(async () => {
    db = await freshDatabase();
  });
  after(async () => {
    await db.drop();
  });

  it('gives the WAL between two positions per one of n, and each relation’s records', async () => {
    const probe = await openWalProbe(db.url);
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      await client.query('CREATE TABLE wal_probe_rows (id bigint PRIMARY KEY, v text)');
      const from = await probe.lsn();
      await client.query(`INSERT INTO wal_probe_rows SELECT n, repeat('x', 100) FROM generate_series(1, 200) AS n`);
      const to = await probe.lsn();
      const shot = await probe.span('service', from, to, 200);
      expect(shot.server).to.equal('service');
      expect(shot.requests).to.equal(200);
      // a heap record of a 100-byte row and an index entry, at least
      expect(shot.bytes_per_request).to.be.greaterThan(100);
      if (probe.breakdown !== true) {
        expect(shot.note).to.equal(probe.breakdown);
        expect(shot.relations).to.equal(null);
        return;
      }
      const heap = shot.relations!.find((r) => r.relation === 'wal_probe_rows');
      const index = shot.relations!.find((r) => r.relation === 'wal_probe_rows_pkey');
      expect(heap, JSON.stringify(shot.relations)).to.not.equal(undefined);
      // one insert record per row (INSERT, or INSERT+INIT where it began a page)
      expect(heap!.records_per_request).to.equal(1);
      expect(Object.keys(heap!.types).every((t) => t.startsWith('INSERT'))).to.equal(true);
      expect(index!.records_per_request).to.be.at.least(1);
      expect(heap!.bytes_per_request).to.be.greaterThan(100);
    } finally {
      await client.end();
      await probe.close();
    }
  });
});
