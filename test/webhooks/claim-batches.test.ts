// A backlog that fills the dispatcher's pool is claimed in batches, not a
// slot at a time (src/webhooks/fair-share.rules.ts CLAIM_PART_OF_POOL, dispatcher.worker.ts). Once
// the pool was full, every attempt that ended made room for one claim, and the
// loop claimed it at once: a statement of some sixty plan nodes for every few
// deliveries (docs/profiles/dispatch-claims-per-statement.md: about 17 a
// claim against a local receiver). Now a small room waits up to coalesceMs
// (10 ms by default) to grow to an eighth of the pool, while new work named by
// a NOTIFY is still claimed at once.
import { expect } from 'chai';
import { Dispatcher } from '../../src/webhooks/dispatcher.worker.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { TestReceiver } from '../support/receiver.ts';
import { createIntegration, createTenant, enqueue, eventually, matchedBody, statementRows } from '../support/webhook-fixtures.ts';

describe('webhooks: a backlog that fills the pool is claimed in batches', function () {
  this.timeout(60_000);
  let srv: TestServer;
  let receiver: TestReceiver;
  let dispatcher: Dispatcher | undefined;

  before(async () => {
    srv = await startTestServer({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
    receiver = await TestReceiver.start(() => ({ status: 204 }));
  });
  after(async () => {
    await dispatcher?.stop();
    await receiver.close();
    await srv.stop();
  });

  it('takes about an eighth of the pool a claim once the pool is full, and every delivery once', async () => {
    const db = srv.deps.db;
    const tenant = await createTenant(db, srv.deps.tokens);
    const hook = await createIntegration(db, srv.deps.cipher, tenant.orgId, { endpoint: receiver.url });
    const total = 1280;
    const bodies = Array.from({ length: total }, (_, i) => ({ kind: 'matched' as const, body: matchedBody(tenant.orgId, `batch-${i}@example.com`) }));
    await enqueue(db, hook, bodies);

    // a pool of 256 (an eighth: 32), smaller than what the organisation and its lane may hold, so the pool is what
    // fills; a small room may wait 200 ms to grow (10 by default), so that a slow machine still sees the rule
    dispatcher = new Dispatcher(srv.deps, undefined, {
      pollIntervalMs: 50,
      coalesceMs: 200,
      globalConcurrency: 272,
      reserve: 16,
      perOrganisation: 448,
    });
    const before = await statementRows(srv.deps.metrics.registry, 'claim');
    dispatcher.start();
    await eventually(async () => (receiver.requests.length >= total ? true : undefined), 45_000, 'every delivery to arrive');
    const after = await statementRows(srv.deps.metrics.registry, 'claim');

    const statements = after.statements - before.statements;
    const rows = after.rows - before.rows;
    expect(rows, 'deliveries claimed').to.equal(total);
    // claiming every slot as it freed made 129–166 claims of this backlog (8–10 deliveries each); batches of 32 or more made 11
    expect(rows / statements, `deliveries per claim (${rows} in ${statements} claims)`).to.be.at.least(16);
    expect(new Set(receiver.requests.map((r) => r.headers['webhook-id'])).size, 'each delivery sent once').to.equal(total);
  });
});
