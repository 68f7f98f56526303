// upsertVisitors reads back, under the upsert's row locks, the visitors it
// left unchanged (a returning visitor within VISITOR_TOUCH_SECONDS): on the
// transaction path that is most visitors of every batch with an exported
// event. The read must look each visitor up by its primary key whatever plan
// PostgreSQL caches for the prepared statement. The join with the keys as a
// jsonb record set it replaced made a generic plan that hashed every visitor
// of the organisation: 763 buffers and 4.7 ms per batch at ~17,000 visitors in
// the bench's mixed load (docs/profiles/visitors-read-back.md). Its successor,
// `org_id = ANY AND core_id = ANY`, made a custom plan on statistics taken
// before a new organisation grew walk all of its visitors through an index
// that begins with org_id (docs/profiles/mixed-new-organisation-plans.md).
import { expect } from 'chai';
import { sql } from 'kysely';
import { PLAIN_POSTGRES } from '../../src/db/database.ts';
import { upsertVisitors } from '../../src/identity/identity.repository.ts';
import type { VisitorTouch } from '../../src/identity/visitors-upsert.repository.ts';
import { freshDatabase, type TestDatabase } from '../support/harness.ts';
import { testOrgId } from '../support/org-id.ts';
import { onCitusCluster } from '../support/citus.ts';
import { buffersOf, explainGeneric, statementRecorder } from '../support/statements.ts';

const VISITORS = 20_000;

describe('identity: the visitors an upsert left unchanged are read back by their keys', () => {
  let database: TestDatabase;
  const [a, b] = [testOrgId(1), testOrgId(2)];
  let recorder: ReturnType<typeof statementRecorder>;
  const seenAt = new Date(Date.now() - 1_000);

  const touch = (orgId: typeof a, coreId: string): VisitorTouch => ({
    orgId,
    coreId,
    roamingId: `r-${coreId}`,
    corexId: null,
    firstSeen: seenAt,
    lastSeen: seenAt,
    userAgent: null,
    location: null,
  });

  before(async () => {
    recorder = statementRecorder();
    database = await freshDatabase();
    const db = database.handle.db;
    // VISITORS visitors in organisation 1 (each its own person), a few in organisation 2, all seen a second ago
    for (const [org, n] of [
      [1, VISITORS],
      [2, 10],
    ] as const) {
      await sql`
        INSERT INTO visitors (org_id, core_id, roaming_id, first_seen, last_seen)
        SELECT ${org}::bigint, 'v' || g, 'r-v' || g, ${seenAt}::timestamptz, ${seenAt}::timestamptz FROM generate_series(1, ${n}::int) g`.execute(db);
    }
    await sql`ANALYZE visitors`.execute(db);
    // organisation 3 arrives after the statistics were taken: they know nothing of it
    await sql`
      INSERT INTO visitors (org_id, core_id, roaming_id, first_seen, last_seen)
      SELECT 3, 'v' || g, 'r-v' || g, ${seenAt}::timestamptz, ${seenAt}::timestamptz FROM generate_series(1, ${VISITORS}::int) g`.execute(db);
  });
  after(async () => {
    recorder.restore();
    await database.drop();
  });

  /** upsertVisitors of `rows` in a transaction, and the read-back statement it sent */
  async function upsert(rows: VisitorTouch[]) {
    let out: Awaited<ReturnType<typeof upsertVisitors>> = [];
    const statements = await recorder.during(async () => {
      out = await database.handle.db.transaction().execute((tx) => upsertVisitors(tx, rows));
    });
    return { out, readBack: statements.filter((s) => s.text.includes('false AS inserted')) };
  }

  it('returns each unchanged visitor once with its person, across organisations, and none of another organisation', async () => {
    // v5 exists in both organisations; v9999 only in organisation 1: the arrays pair b with v9999, which must not come back
    const { out, readBack } = await upsert([touch(a, 'v9999'), touch(b, 'v5'), touch(a, 'new-one')]);
    expect(readBack).to.have.length(1);
    const byKey = new Map(out.map((r) => [`${r.org_id}/${r.core_id}`, r]));
    expect([...byKey.keys()].sort()).to.deep.equal(['1/new-one', '1/v9999', '2/v5']);
    expect(byKey.get('1/new-one')!.inserted).to.equal(true);
    expect(byKey.get('1/v9999')!.inserted).to.equal(false);
    const persons = await sql<{ org_id: number; core_id: string; person_id: number }>`
      SELECT org_id, core_id, person_id FROM visitors WHERE (org_id, core_id) IN ((1, 'v9999'), (2, 'v5'))`.execute(database.handle.db);
    for (const p of persons.rows) expect(byKey.get(`${p.org_id}/${p.core_id}`)!.person_id).to.equal(p.person_id);
  });

  it('touches a handful of buffers under the generic plan PostgreSQL caches for it', async () => {
    const { readBack } = await upsert(Array.from({ length: 20 }, (_, i) => touch(a, `v${i * 997 + 1}`)));
    expect(readBack).to.have.length(1);
    const plan = await explainGeneric(database.handle.pool, readBack[0]!);
    // 20 primary key lookups: about 3 buffers each
    expect(buffersOf(plan), JSON.stringify(plan)).to.be.lessThan(100);
  });

  it('looks each visitor up by key in a new organisation the statistics do not know yet', async () => {
    const c = testOrgId(3);
    const { out, readBack } = await upsert(Array.from({ length: 20 }, (_, i) => touch(c, `v${i * 997 + 1}`)));
    expect(readBack).to.have.length(1);
    expect(out.filter((r) => !r.inserted)).to.have.length(20);
    if (onCitusCluster()) {
      // the routed form (the key probe per pair would run on every shard), which the shard's worker plans
      // with its own statistics, taken before organisation 3 grew: there too a lookup of the 20 keys
      // (measured on 28 November: a bitmap scan of visitors_pkey on both columns, 60 buffers)
      expect(readBack[0]!.text).to.not.include(PLAIN_POSTGRES);
      const onShard = await explainGeneric(database.handle.pool, readBack[0]!); // fails unless it goes to one shard
      expect(buffersOf(onShard), JSON.stringify(onShard)).to.be.lessThan(100);
      return;
    }
    expect(readBack[0]!.text).to.include(PLAIN_POSTGRES);
    const plan = await explainGeneric(database.handle.pool, readBack[0]!, 'force_custom_plan');
    // 20 primary key lookups, not the 20,000 visitors of organisation 3 (estimated at one row)
    expect(buffersOf(plan), JSON.stringify(plan)).to.be.lessThan(100);
  });
});
