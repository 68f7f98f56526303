// trackway_prepend_views: how a batch's recent views go in front of a
// person's stored ones (PROFILE_ONTO_PERSON, both profile writes). It must
// give what Stitching's merge gives (fresh first, then the stored views whose
// url fresh lacks, at most 3), and the planner must put its body in place of
// the call: a SQL function it cannot inline is planned again by every
// statement that calls it (src/db/migrations/2026-11-26T0600_inline_prepend_views.ts).
import { expect } from 'chai';
import { sql } from 'kysely';
import { freshDatabase, type TestDatabase } from '../support/harness.ts';

type View = { url: string; at: string };
const v = (url: string, at = '2026-11-26T10:00:00.000Z'): View => ({ url, at });

/** Stitching's rule, written out: fresh (distinct, most recent first), then stored views not in fresh, at most 3. */
function expected(fresh: View[] | null, stored: View[] | null): View[] {
  const f = fresh ?? [];
  const urls = new Set(f.map((x) => x.url));
  return [...f, ...(stored ?? []).filter((x) => !urls.has(x.url))].slice(0, 3);
}

describe('identity: trackway_prepend_views', () => {
  let database: TestDatabase;
  before(async () => {
    database = await freshDatabase();
  });
  after(async () => {
    await database.drop();
  });

  const cases: [string, View[] | null, View[] | null][] = [
    ['nothing on either side', [], []],
    ['nulls on either side', null, null],
    ['no stored views', [v('a'), v('b')], null],
    ['no fresh views', null, [v('a'), v('b')]],
    ['a fresh view of a stored url moves it to the front, with the fresh time', [v('b', '2026-11-26T11:00:00.000Z')], [v('a'), v('b'), v('c')]],
    ['three fresh views push every stored one out', [v('x'), v('y'), v('z')], [v('a'), v('b'), v('c')]],
    ['two fresh, one stored kept in its order', [v('x'), v('a')], [v('a'), v('b'), v('c')]],
    ['one fresh, two stored kept', [v('x')], [v('a'), v('b'), v('c')]],
    [
      'urls differing only in case or query are different views',
      [v('https://s.example/P?x=1')],
      [v('https://s.example/p?x=1'), v('https://s.example/P?x=2')],
    ],
  ];
  for (const [title, fresh, stored] of cases) {
    it(title, async () => {
      const { rows } = await sql<{ views: View[] }>`
        SELECT trackway_prepend_views(${fresh === null ? null : JSON.stringify(fresh)}::jsonb, ${stored === null ? null : JSON.stringify(stored)}::jsonb) AS views`.execute(
        database.handle.db,
      );
      expect(rows[0]!.views).to.deep.equal(expected(fresh, stored));
    });
  }

  it('is inlined by the planner: the plan of an update that calls it names no function call', async () => {
    // EXPLAIN shows an UPDATE's new values (an ON CONFLICT's SET it does not); the planner inlines both alike
    const { rows } = await sql<{ 'QUERY PLAN': string }>`
      EXPLAIN (VERBOSE, COSTS OFF)
      UPDATE persons AS p SET last_view = trackway_prepend_views(${JSON.stringify([v('a')])}::jsonb, p.last_view)
      WHERE p.org_id = 1 AND p.id = 1`.execute(database.handle.db);
    // on a Citus cluster the plan shows the shard query the coordinator sends (`Query:`, the call as written) above the worker's plan
    const plan = rows
      .map((r) => r['QUERY PLAN'])
      .filter((line) => !/^\s*Query: /.test(line))
      .join('\n');
    expect(plan).to.include('jsonb_path_query_array');
    expect(plan).not.to.include('trackway_prepend_views');
  });
});
