// The dispatcher's prepared statements (the claim, the outcome) must find the
// deliveries they update by key, whatever generic plan PostgreSQL caches for
// them (src/db/migrations/2026-11-26T0800_deliveries_org_statistics.ts). With statistics taken while an organisation had
// few deliveries, the generic plans scanned all of the organisation's
// deliveries to update a handful: 4,164 rows for a claim of 5 (7.3 ms), 2,976
// for an outcome of 1, in the bench's mixed load (auto_explain on PostgreSQL
// 15; docs/profiles/visitors-read-back.md, "the dispatcher's statements").
// The same happens with exact statistics to a large organisation among many
// small ones: the generic plan takes the average organisation's size. Here:
// 20,000 delivered deliveries of one organisation and one each of 20,000
// others, a few pending ones delivered to a real receiver, then each
// statement the dispatcher sent explained under a forced generic plan.
import { expect } from 'chai';
import { sql } from 'kysely';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { TestReceiver } from '../support/receiver.ts';
import { buffersOf, explainGeneric, statementRecorder } from '../support/statements.ts';
import { createIntegration, createTenant, enqueue, exportedBody } from '../support/webhook-fixtures.ts';

const STORED = 20_000;

describe('webhooks: the dispatcher’s statements find deliveries by key under a generic plan', function () {
  this.timeout(60_000);
  let srv: TestServer;
  let receiver: TestReceiver;
  let recorder: ReturnType<typeof statementRecorder>;

  before(async () => {
    recorder = statementRecorder();
    srv = await startTestServer({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' }, { dispatcher: true });
    receiver = await TestReceiver.start();
  });
  after(async () => {
    recorder.restore();
    await receiver.close();
    await srv.stop();
  });

  it('claims and records outcomes touching a handful of buffers, not the organisation’s deliveries', async () => {
    const db = srv.deps.db;
    const tenant = await createTenant(db, srv.deps.tokens);
    const integration = await createIntegration(db, srv.deps.cipher, tenant.orgId, { endpoint: receiver.url });
    // one large organisation among many small ones, as a shared database holds them: STORED delivered deliveries of
    // this organisation and one delivery each of STORED others. The statistics are exact, and the generic plan's
    // estimate for "an organisation" is the average one: 2 rows.
    await sql`
      INSERT INTO deliveries (org_id, integration_id, kind, body, status, webhook_id, delivered_at)
      SELECT ${tenant.orgId}::bigint, ${integration.id}::bigint, 'event', '{}', 'delivered', 'msg_' || g, now()
      FROM generate_series(1, ${STORED}::int) g`.execute(db);
    await sql`
      INSERT INTO deliveries (org_id, integration_id, kind, body, status, webhook_id, delivered_at)
      SELECT 1000000 + g, 1, 'event', '{}', 'delivered', 'msg_other_' || g, now()
      FROM generate_series(1, ${STORED}::int) g`.execute(db);
    await sql`ANALYZE deliveries`.execute(db);

    const statements = await recorder.during(async () => {
      await enqueue(
        db,
        integration,
        [1, 2, 3].map(() => ({ kind: 'event' as const, body: exportedBody(tenant.orgId) })),
      );
      await receiver.waitFor(3, 10_000);
      // the outcomes are written after the receiver answered (a delivering attempt onto its delivery's row)
      const delivered = () =>
        srv.deps.db.selectFrom('deliveries').select('id').where('org_id', '=', tenant.orgId).where('delivered_attempt_at', 'is not', null).execute();
      for (let i = 0; i < 100 && (await delivered()).length < 3; i++) {
        await new Promise((r) => setTimeout(r, 20));
      }
    });
    const claim = statements.find((s) => s.text.includes('WITH RECURSIVE') && s.text.includes('claimed AS'));
    const outcome = statements.find((s) => s.text.includes('INSERT INTO delivery_attempts') && s.text.includes('UPDATE deliveries d'));
    expect(claim, 'the claim statement').to.not.equal(undefined);
    expect(outcome, 'the outcome statement').to.not.equal(undefined);

    for (const [name, statement] of [
      ['claim', claim!],
      ['outcome', outcome!],
    ] as const) {
      const plan = await explainGeneric(srv.database.handle.pool, statement);
      // STORED deliveries fill hundreds of pages: a statement that walks them shows it
      expect(buffersOf(plan), `${name}: ${JSON.stringify(plan)}`).to.be.lessThan(150);
    }
  });
});
