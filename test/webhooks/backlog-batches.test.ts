// A backlog that fills the dispatcher's pool is claimed, and its outcomes
// written, in batches, not a slot at a time (src/webhooks/fair-share.rules.ts
// CLAIM_PART_OF_POOL, poolPart, holdsBacklog; dispatcher.worker.ts;
// completions.worker.ts `gather`).
// - Claims: once the pool was full, every attempt that ended made room for one
//   claim, and the loop claimed it at once: a statement of some sixty plan
//   nodes for every few deliveries (docs/profiles/dispatch-claims-per-statement.md:
//   about 17 a claim against a local receiver). Now a small room waits up to
//   coalesceMs (10 ms by default) to grow to an eighth of the pool, while new
//   work named by a NOTIFY is still claimed at once.
// - Outcomes: group commit alone wrote whatever had ended during the last
//   write, about 8 outcomes a statement against a local receiver, each
//   statement costing the dispatcher's thread several attempts' worth of Node
//   time (BENCHMARKS.md, twelfth stop). Now, while the pool holds a backlog, a
//   write first lets outcomes gather for up to coalesceMs, until an eighth of
//   the pool has ended; outside a backlog an outcome is written at once.
import { expect } from 'chai';
import { Dispatcher } from '../../src/webhooks/dispatcher.worker.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { TestReceiver } from '../support/receiver.ts';
import { createIntegration, createTenant, enqueue, eventually, many, matchedBody, statementRows } from '../support/webhook-fixtures.ts';

/** How many of the integration's deliveries are delivered (their outcome written). */
async function delivered(srv: TestServer, integrationId: number): Promise<number> {
  const row = await srv.deps.db
    .selectFrom('deliveries')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('integration_id', '=', integrationId)
    .where('status', '=', 'delivered')
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

describe('webhooks: a backlog is claimed, and its outcomes written, in batches', function () {
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

  it('takes and writes about an eighth of the pool a statement once the pool is full, and every delivery once', async () => {
    const db = srv.deps.db;
    const registry = srv.deps.metrics.registry;
    const tenant = await createTenant(db, srv.deps.tokens);
    const hook = await createIntegration(db, srv.deps.cipher, tenant.orgId, { endpoint: receiver.url });
    const total = 1280;
    await enqueue(db, hook, many(tenant.orgId, total, 'batch'));

    // a pool of 256 (an eighth: 32), smaller than what the organisation and its lane may hold, so the pool is what
    // fills; a small room, and a backlog's outcomes, may wait 200 ms (10 by default), so that a slow machine still
    // sees the rule
    dispatcher = new Dispatcher(srv.deps, undefined, {
      pollIntervalMs: 50,
      coalesceMs: 200,
      globalConcurrency: 272,
      reserve: 16,
      perOrganisation: 448,
    });
    const claimsBefore = await statementRows(registry, 'claim');
    const outcomesBefore = await statementRows(registry, 'outcome');
    dispatcher.start();
    await eventually(async () => ((await delivered(srv, hook.id)) === total ? true : undefined), 45_000, 'every outcome written');
    const claimsAfter = await statementRows(registry, 'claim');
    const outcomesAfter = await statementRows(registry, 'outcome');

    const claims = claimsAfter.statements - claimsBefore.statements;
    const claimed = claimsAfter.rows - claimsBefore.rows;
    expect(claimed, 'deliveries claimed').to.equal(total);
    // claiming every slot as it freed made 129–166 claims of this backlog (8–10 deliveries each); batches of 32 or more made 11
    expect(claimed / claims, `deliveries per claim (${claimed} in ${claims} claims)`).to.be.at.least(16);

    const writes = outcomesAfter.statements - outcomesBefore.statements;
    const written = outcomesAfter.rows - outcomesBefore.rows;
    expect(written, 'outcomes written').to.equal(total);
    // group commit alone wrote this backlog in 174 statements (7 outcomes each); gathered, in 44–48 (a backlog's
    // tail, held below an eighth of the pool, is written as it ends)
    expect(written / writes, `outcomes per statement (${written} in ${writes} statements)`).to.be.at.least(16);
    expect(new Set(receiver.requests.map((r) => r.headers['webhook-id'])).size, 'each delivery sent once').to.equal(total);
    expect(receiver.requests.length, 'no delivery sent twice').to.equal(total);
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
    await eventually(async () => ((await delivered(srv, hook.id)) === 1 ? true : undefined), 10_000, 'its outcome written');
    expect(Date.now() - arrived, 'ms from arrival to its outcome written').to.be.below(5_000);
  });
});
