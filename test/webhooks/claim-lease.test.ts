// A claim's lease is a column no index holds (src/db/migrations/2026-12-01T0200_deliveries_lease.ts),
// so the claim is a HOT update of each delivery, and a pending delivery is
// due once its next_attempt_at has passed and it holds no lease still
// running. Here, on real PostgreSQL and the dispatcher's own statements:
// what a claim writes (counted by PostgreSQL for the transaction), that a
// running lease keeps a delivery from a second claim and from the scan, that
// a lease run out makes it due again (its lost attempt recorded), and that a
// claim given back is due at once.
import { expect } from 'chai';
import { sql } from 'kysely';
import type { OrgId } from '../../src/db/tenancy.ts';
import type { Database } from '../../src/db/database.ts';
import { LOST_ATTEMPT_ERROR, claimForOrganisation, dueOrganisations, releaseClaims } from '../../src/webhooks/claims.repository.ts';
import { onCitusCluster } from '../support/citus.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { createIntegration, createTenant, enqueue, exportedBody } from '../support/webhook-fixtures.ts';

const DELIVERIES = 12;
const MARGIN_MS = 1_000;

describe('webhooks: a claim’s lease in a column of its own', function () {
  this.timeout(30_000);
  let srv: TestServer;
  before(async () => {
    srv = await startTestServer({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
  });
  after(async () => {
    await srv.stop();
  });

  const claim = (db: Database, org: OrgId, now: Date) =>
    claimForOrganisation(db, org, now, { limit: 100, leaseMarginMs: MARGIN_MS, integrationRooms: [], defaultIntegrationRoom: 100 });

  async function backlog(tag: string) {
    const db = srv.deps.db;
    const tenant = await createTenant(db, srv.deps.tokens, tag);
    const integration = await createIntegration(db, srv.deps.cipher, tenant.orgId, { endpoint: 'http://127.0.0.1:9/hook', httpTimeout: 5 });
    const ids = await enqueue(
      db,
      integration,
      Array.from({ length: DELIVERIES }, (_, i) => ({ kind: 'event' as const, body: exportedBody(tenant.orgId, `${tag}${i}@example.com`) })),
    );
    return { org: tenant.orgId, ids };
  }

  it('claims with HOT updates: no index of deliveries takes an entry', async () => {
    const { org, ids } = await backlog('hot');
    const counted = await srv.deps.db.transaction().execute(async (tx) => {
      const claimed = await claim(tx, org, new Date());
      const { rows } = await sql<{ updated: string; hot: string }>`
        SELECT pg_stat_get_xact_tuples_updated('deliveries'::regclass) AS updated,
               pg_stat_get_xact_tuples_hot_updated('deliveries'::regclass) AS hot`.execute(tx);
      return { claimed: claimed.rows.length, updated: Number(rows[0]!.updated), hot: Number(rows[0]!.hot) };
    });
    expect(counted.claimed).to.equal(ids.length);
    // under Citus the rows are updated in the workers' shards, whose counters are not the coordinator's
    if (onCitusCluster()) return;
    expect(counted).to.deep.equal({ claimed: ids.length, updated: ids.length, hot: ids.length });
  });

  it('keeps a delivery in flight from a second claim and from the scan until its lease runs out', async () => {
    const db = srv.deps.db;
    const { org, ids } = await backlog('held');
    const t0 = new Date();
    const first = await claim(db, org, t0);
    expect(first.rows.map((r) => r.id).sort((a, b) => a - b)).to.deep.equal(ids);
    const row = await db
      .selectFrom('deliveries')
      .select(['next_attempt_at', 'lease_until', 'attempts_count'])
      .where('org_id', '=', org)
      .where('id', '=', ids[0]!)
      .executeTakeFirstOrThrow();
    // the due time stays where it was; the lease ends after the endpoint's timeout and the margin
    expect(row.next_attempt_at!.getTime()).to.be.at.most(t0.getTime());
    expect(row.lease_until!.getTime()).to.equal(t0.getTime() + 5_000 + MARGIN_MS);
    expect(row.attempts_count).to.equal(1);

    const during = new Date(t0.getTime() + 5_000);
    expect((await claim(db, org, during)).rows).to.deep.equal([]);
    expect(await dueOrganisations(db, during, 1000, [], undefined)).to.not.include(org);

    // the process that claimed them died: once the leases run out they are due, and claimed again
    const after = new Date(t0.getTime() + 5_000 + MARGIN_MS + 1);
    expect(await dueOrganisations(db, after, 1000, [], undefined)).to.include(org);
    const again = await claim(db, org, after);
    expect(again.rows.map((r) => r.id).sort((a, b) => a - b)).to.deep.equal(ids);
    for (const r of again.rows) {
      expect(r.attempts_count).to.equal(2);
      // due since the lease ran out (the dispatch lag is measured from there)
      expect(r.due_at.getTime()).to.equal(t0.getTime() + 5_000 + MARGIN_MS);
    }
    const lost = await db
      .selectFrom('delivery_attempts')
      .select(['n', 'error', 'attempted_at'])
      .where('org_id', '=', org)
      .where('delivery_id', '=', ids[0]!)
      .execute();
    expect(lost).to.have.length(1);
    expect(lost[0]).to.include({ n: 1, error: LOST_ATTEMPT_ERROR });
    expect(lost[0]!.attempted_at.getTime()).to.equal(t0.getTime());
  });

  it('makes a claim given back due at once, with its attempt number restored', async () => {
    const db = srv.deps.db;
    const { org, ids } = await backlog('back');
    const t0 = new Date();
    const first = await claim(db, org, t0);
    await releaseClaims(
      db,
      first.rows.map((r) => ({ orgId: r.org_id, id: r.id, n: r.attempts_count })),
    );
    const again = await claim(db, org, new Date(t0.getTime() + 1));
    expect(again.rows.map((r) => r.id).sort((a, b) => a - b)).to.deep.equal(ids);
    expect(again.rows.map((r) => r.attempts_count)).to.deep.equal(ids.map(() => 1));
    // no attempt was made, so none is recorded as lost
    const recorded = await db.selectFrom('delivery_attempts').select('n').where('org_id', '=', org).execute();
    expect(recorded).to.deep.equal([]);
  });
});
