// The keeper of the deliveries' statistics (src/webhooks/delivery-statistics.worker.ts).
// The hazard it answers, reproduced on a real PostgreSQL: a prepared update of a
// few deliveries by key, its generic plan cached while `deliveries` was analyzed
// empty, walks every delivery of the organisation once the table has grown, and
// goes on doing so until an ANALYZE (docs/profiles/mixed-new-organisation-plans.md:
// the dispatcher's claim, up to 786 ms for 200 deliveries in the bench's mixed
// load). After the keeper's check the same prepared statement looks its rows up
// by key.
import { expect } from 'chai';
import { sql } from 'kysely';
import pg from 'pg';
import { createLogger } from '../../src/log.ts';
import { analyzeDue, MIN_CHANGED, startDeliveryStatistics } from '../../src/webhooks/delivery-statistics.worker.ts';
import { deliveriesMoved } from '../../src/webhooks/delivery-statistics.repository.ts';
import { onCitusCluster } from '../support/citus.ts';
import { freshDatabase, type TestDatabase } from '../support/harness.ts';
import { testOrgId } from '../support/org-id.ts';

const STORED = 20_000;

describe('webhooks: the deliveries’ statistics kept from falling far behind the table', function () {
  this.timeout(60_000);

  it('is due once the table changed by as many rows as its statistics counted, and at least MIN_CHANGED', () => {
    expect(analyzeDue({ changed: 0, analyzed: 0 })).to.equal(false);
    expect(analyzeDue({ changed: MIN_CHANGED - 1, analyzed: 0 })).to.equal(false);
    expect(analyzeDue({ changed: MIN_CHANGED, analyzed: 0 })).to.equal(true);
    expect(analyzeDue({ changed: 999_999, analyzed: 1_000_000 }), 'autovacuum keeps up with this one').to.equal(false);
    expect(analyzeDue({ changed: 1_000_000, analyzed: 1_000_000 })).to.equal(true);
  });

  describe('on a database', () => {
    let database: TestDatabase;
    let client: pg.Client;
    const org = testOrgId(1);

    before(async () => {
      database = await freshDatabase();
      client = new pg.Client({ connectionString: database.url });
      await client.connect();
    });
    after(async () => {
      await client?.end();
      await database?.drop();
    });

    /** Buffers the prepared update of five deliveries touches, explained as it runs now. */
    async function buffersOfUpdate(ids: number[]): Promise<number> {
      const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: { 'Shared Hit Blocks': number; 'Shared Read Blocks': number } }] }>(
        `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE touch(${org}, '{${ids.join(',')}}')`,
      );
      const plan = rows[0]!['QUERY PLAN'][0].Plan;
      return plan['Shared Hit Blocks'] + plan['Shared Read Blocks'];
    }

    /** On Citus the coordinator's deliveries is an empty shell, whose shards their own servers analyze: nothing moves, nothing is due. */
    async function coordinatorLeftAlone(): Promise<void> {
      const db = database.handle.db;
      const keeper = startDeliveryStatistics({ db, log: createLogger('silent') }, { checkMs: 3_600_000 });
      try {
        await sql`
          INSERT INTO deliveries (org_id, integration_id, kind, body, status, webhook_id, delivered_at)
          SELECT ${org}::bigint, 1, 'event', '{}', 'delivered', 'msg_' || g, now()
          FROM generate_series(1, ${MIN_CHANGED * 2}::int) g`.execute(db);
        // the statistics collector reports within about a second what moves (the test below waits for it)
        await new Promise((r) => setTimeout(r, 3_000));
        expect((await deliveriesMoved(db))?.changed ?? 0, 'the shell moved').to.equal(0);
        expect(await keeper.check()).to.equal(false);
      } finally {
        keeper.stop();
      }
    }

    it('analyzes a table grown past its statistics, and a cached plan then finds its rows by key again (on Citus: leaves the coordinator alone)', async () => {
      if (onCitusCluster()) return coordinatorLeftAlone();
      const db = database.handle.db;
      const keeper = startDeliveryStatistics({ db, log: createLogger('silent') }, { checkMs: 3_600_000 });
      try {
        await sql`ANALYZE deliveries`.execute(db);
        expect(await keeper.check(), 'nothing changed: nothing to do').to.equal(false);

        // the claim's shape: a few deliveries of one organisation updated by key, prepared on one connection,
        // run often enough on the empty table for PostgreSQL to cache a generic plan
        await client.query(`PREPARE touch(bigint, bigint[]) AS
          UPDATE deliveries d SET attempts_count = d.attempts_count
          FROM unnest($2::bigint[]) AS t(id) WHERE d.org_id = $1 AND d.id = t.id`);
        for (let i = 0; i < 8; i++) await client.query(`EXECUTE touch(${org}, '{1,2,3,4,5}')`);

        await sql`
          INSERT INTO deliveries (org_id, integration_id, kind, body, status, webhook_id, delivered_at)
          SELECT ${org}::bigint, 1, 'event', '{}', 'delivered', 'msg_' || g, now()
          FROM generate_series(1, ${STORED}::int) g`.execute(db);
        const { rows } = await sql<{ id: number }>`SELECT id FROM deliveries WHERE org_id = ${org}::bigint ORDER BY id DESC LIMIT 5`.execute(db);
        const ids = rows.map((r) => Number(r.id));

        const stale = await buffersOfUpdate(ids);
        // the premise: the plan cached on the empty table walks the organisation (hundreds of pages)
        expect(stale, 'the cached plan before the keeper ran').to.be.above(100);

        // the statistics collector reports the inserts within a few seconds
        for (let i = 0; i < 150 && ((await deliveriesMoved(db))?.changed ?? 0) < STORED; i++) await new Promise((r) => setTimeout(r, 100));
        expect((await deliveriesMoved(db))?.changed).to.be.at.least(STORED);
        expect(await keeper.check(), 'the keeper ran ANALYZE').to.equal(true);
        const { rows: counted } = await sql<{ n: number }>`SELECT reltuples::float8 AS n FROM pg_class WHERE oid = 'deliveries'::regclass`.execute(
          db,
        );
        expect(counted[0]!.n).to.be.at.least(STORED * 0.9);

        // the same prepared statement, re-planned by PostgreSQL after the ANALYZE: five key lookups
        const fresh = await buffersOfUpdate(ids);
        expect(fresh, `the cached plan after the keeper ran (before: ${stale} buffers)`).to.be.below(50);
      } finally {
        keeper.stop();
      }
    });
  });
});
