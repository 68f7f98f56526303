// A backlog's outcomes are written in batches, not as they trickle in
// (src/webhooks/completions.worker.ts `gather`, fair-share.rules.ts poolPart and
// holdsBacklog). Group commit alone wrote whatever had ended during the last
// write: about 8 outcomes a statement against a local receiver, each
// statement costing the dispatcher's thread several attempts' worth of Node
// time (BENCHMARKS.md, twelfth stop). Now, while the pool holds a backlog,
// a write first lets outcomes gather for up to coalesceMs (10 ms by default),
// until an eighth of the pool has ended; outside a backlog an outcome is
// written at once.
import { expect } from 'chai';
import { Dispatcher } from '../../src/webhooks/dispatcher.worker.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { TestReceiver } from '../support/receiver.ts';
import { createIntegration, createTenant, enqueue, eventually, matchedBody, statementRows } from '../support/webhook-fixtures.ts';

/** Every delivery of the integration, with its status. */
async function statuses(srv: TestServer, integrationId: number): Promise<Map<string, number>> {
  const rows = await srv.deps.db
    .selectFrom('deliveries')
    .select(['status'])
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('integration_id', '=', integrationId)
    .groupBy('status')
    .execute();
  return new Map(rows.map((r) => [r.status, Number(r.n)]));
}

describe('webhooks: a backlog’s outcomes are written in batches', function () {
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

  it('writes about an eighth of the pool a statement while a backlog is worked, and every outcome once', async () => {
    const db = srv.deps.db;
    const tenant = await createTenant(db, srv.deps.tokens);
    const hook = await createIntegration(db, srv.deps.cipher, tenant.orgId, { endpoint: receiver.url });
    const total = 1280;
    const bodies = Array.from({ length: total }, (_, i) => ({
      kind: 'matched' as const,
      body: matchedBody(tenant.orgId, `outcome-${i}@example.com`),
    }));
    await enqueue(db, hook, bodies);

    // a pool of 256 (an eighth: 32); outcomes may gather for 200 ms (10 by default), so that a slow machine still sees the rule
    dispatcher = new Dispatcher(srv.deps, undefined, {
      pollIntervalMs: 50,
      coalesceMs: 200,
      globalConcurrency: 272,
      reserve: 16,
      perOrganisation: 448,
    });
    const before = await statementRows(srv.deps.metrics.registry, 'outcome');
    dispatcher.start();
    await eventually(async () => ((await statuses(srv, hook.id)).get('delivered') === total ? true : undefined), 45_000, 'every outcome written');
    const after = await statementRows(srv.deps.metrics.registry, 'outcome');

    const statements = after.statements - before.statements;
    const rows = after.rows - before.rows;
    expect(rows, 'outcomes written').to.equal(total);
    // group commit alone wrote this backlog in 174 statements (7 outcomes each); gathered, in 44–48 (a backlog's
    // tail, held below an eighth of the pool, is written as it ends)
    expect(rows / statements, `outcomes per statement (${rows} in ${statements} statements)`).to.be.at.least(16);
    expect(receiver.requests.length, 'each delivery sent once').to.equal(total);
  });

  it('writes an outcome at once when no backlog is worked', async () => {
    const db = srv.deps.db;
    const tenant = await createTenant(db, srv.deps.tokens);
    const hook = await createIntegration(db, srv.deps.cipher, tenant.orgId, { endpoint: receiver.url });
    await dispatcher?.stop();
    // outcomes of a backlog would wait up to a minute here: one delivery must not
    dispatcher = new Dispatcher(srv.deps, undefined, { pollIntervalMs: 50, coalesceMs: 60_000 });
    dispatcher.start();
    const sent = receiver.requests.length;
    await enqueue(db, hook, [{ kind: 'matched', body: matchedBody(tenant.orgId, 'single@example.com') }]);
    dispatcher.wake();
    await eventually(async () => (receiver.requests.length > sent ? true : undefined), 10_000, 'the delivery to arrive');
    const arrived = Date.now();
    await eventually(async () => ((await statuses(srv, hook.id)).get('delivered') === 1 ? true : undefined), 10_000, 'its outcome written');
    expect(Date.now() - arrived, 'ms from arrival to its outcome written').to.be.below(5_000);
  });
});
