// A delivery is due for a claim made in the millisecond it was committed.
// JavaScript's clock counts milliseconds and PostgreSQL's now() (which stamps
// a new delivery's next_attempt_at) microseconds: a NOTIFY handled at once
// claimed with a `now` up to 999 µs before the delivery's stamp, found it not
// due, and it waited for the next poll (1 s), about once in 2,000 contact
// matches under load (test/webhooks/fair-shares.test.ts saw 1.0–1.8 s).
import { expect } from 'chai';
import { sql } from 'kysely';
import { claimForOrganisation, dueOrganisations } from '../../src/webhooks/claims.repository.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { createIntegration, createTenant, enqueue, matchedBody } from '../support/webhook-fixtures.ts';

describe('webhooks: a delivery committed in the claim’s millisecond is due', () => {
  let srv: TestServer;
  before(async () => {
    srv = await startTestServer({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
  });
  after(async () => {
    await srv.stop();
  });

  it('is found by the scan and claimed, with a `now` 512 µs before its next_attempt_at', async () => {
    const db = srv.deps.db;
    const tenant = await createTenant(db, srv.deps.tokens);
    const integration = await createIntegration(db, srv.deps.cipher, tenant.orgId, { endpoint: 'http://127.0.0.1:9/hook' });
    const [id] = await enqueue(db, integration, [{ kind: 'matched', body: matchedBody(tenant.orgId) }]);
    // stamped as now() stamps it, at 512 µs into a millisecond; the claim's clock reads that millisecond
    const at = new Date(Date.now() - 5_000);
    at.setUTCMilliseconds(724);
    await sql`UPDATE deliveries SET next_attempt_at = ${at.toISOString().replace('Z', '512Z')}::timestamptz
              WHERE org_id = ${tenant.orgId} AND id = ${id}`.execute(db);

    expect(await dueOrganisations(db, at, 100, [], undefined)).to.include(tenant.orgId);
    const claim = await claimForOrganisation(db, tenant.orgId, at, {
      limit: 10,
      leaseMarginMs: 1_000,
      integrationRooms: [],
      defaultIntegrationRoom: 8,
    });
    expect(claim.rows.map((r) => r.id)).to.deep.equal([id]);
  });

  it('still leaves a delivery due a millisecond later for later', async () => {
    const db = srv.deps.db;
    const tenant = await createTenant(db, srv.deps.tokens, 'later');
    const integration = await createIntegration(db, srv.deps.cipher, tenant.orgId, { endpoint: 'http://127.0.0.1:9/hook' });
    const [id] = await enqueue(db, integration, [{ kind: 'matched', body: matchedBody(tenant.orgId) }]);
    const at = new Date(Date.now() - 5_000);
    at.setUTCMilliseconds(724);
    await sql`UPDATE deliveries SET next_attempt_at = ${new Date(at.getTime() + 2).toISOString()}::timestamptz
              WHERE org_id = ${tenant.orgId} AND id = ${id}`.execute(db);
    const claim = await claimForOrganisation(db, tenant.orgId, at, {
      limit: 10,
      leaseMarginMs: 1_000,
      integrationRooms: [],
      defaultIntegrationRoom: 8,
    });
    expect(claim.rows).to.deep.equal([]);
  });
});
