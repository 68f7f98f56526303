// The bench settles the database between scenarios (scripts/bench-database.ts
// settleDatabase): VACUUM (ANALYZE) of every table, then a CHECKPOINT, so
// that autovacuum of one scenario's writes does not run, and count, in the
// next one's rounds. Checked on a real database: the dead rows a scenario
// left are gone and the tables are analysed.
import { expect } from 'chai';
import pg from 'pg';
import { settleDatabase } from '../../scripts/bench-database.ts';
import { type TestDatabase, freshDatabase } from '../support/harness.ts';

describe('bench: the database settled between scenarios', () => {
  let db: TestDatabase;
  before(async () => {
    db = await freshDatabase();
  });
  after(async () => db.drop());

  it('vacuums and analyses every table, and says how long it took', async () => {
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      await c.query('CREATE TABLE bench_settle_probe (id int PRIMARY KEY, v text)');
      // autovacuum off for the probe: only settleDatabase may vacuum it
      await c.query('ALTER TABLE bench_settle_probe SET (autovacuum_enabled = false)');
      await c.query(`INSERT INTO bench_settle_probe SELECT g, 'x' FROM generate_series(1, 5000) g`);
      await c.query('DELETE FROM bench_settle_probe WHERE id % 2 = 0');
      const stats = async () =>
        (
          await c.query<{ dead: string; vacuumed: boolean; analysed: boolean }>(
            `SELECT n_dead_tup AS dead, last_vacuum IS NOT NULL AS vacuumed, last_analyze IS NOT NULL AS analysed
             FROM pg_stat_user_tables WHERE relname = 'bench_settle_probe'`,
          )
        ).rows[0]!;
      // the statistics collector reports asynchronously (PostgreSQL < 15): wait until it shows the deletes
      const before = Date.now();
      let s = await stats();
      while (Number(s.dead) === 0 && Date.now() - before < 5_000) {
        await new Promise((r) => setTimeout(r, 100));
        s = await stats();
      }
      expect(Number(s.dead)).to.be.greaterThan(0);
      expect(s.vacuumed).to.equal(false);

      const took = await settleDatabase(db.url);
      expect(took.vacuum).to.be.a('number').and.at.least(0);
      expect(took.checkpoint === null || took.checkpoint >= 0).to.equal(true);

      const t = Date.now();
      s = await stats();
      while (!(s.vacuumed && s.analysed) && Date.now() - t < 5_000) {
        await new Promise((r) => setTimeout(r, 100));
        s = await stats();
      }
      expect(s.vacuumed).to.equal(true);
      expect(s.analysed).to.equal(true);
      expect(Number(s.dead)).to.equal(0);
    } finally {
      await c.end();
    }
  });
});
