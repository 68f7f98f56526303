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
import { createRequire } from 'node:module';
import { expect } from 'chai';
import { sql } from 'kysely';
import pg from 'pg';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { TestReceiver } from '../support/receiver.ts';
import { createIntegration, createTenant, enqueue, exportedBody } from '../support/webhook-fixtures.ts';

/** pg's own conversion of a parameter to its text form (arrays, dates, buffers) */
const { prepareValue } = createRequire(import.meta.url)('pg/lib/utils.js') as { prepareValue: (v: unknown) => unknown };

const STORED = 20_000;

interface PlanNode {
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
}

describe('webhooks: the dispatcher’s statements find deliveries by key under a generic plan', function () {
  this.timeout(60_000);
  let srv: TestServer;
  let receiver: TestReceiver;
  let sent: { text: string; values: unknown[] }[] | null = null;
  const original = pg.Client.prototype.query;

  before(async () => {
    pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
      const first = args[0] as { text?: string; values?: unknown[] } | string;
      const text = typeof first === 'string' ? first : first?.text;
      const values = typeof first === 'string' ? args[1] : first?.values;
      if (sent && typeof text === 'string') sent.push({ text, values: Array.isArray(values) ? values : [] });
      return (original as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof pg.Client.prototype.query;
    srv = await startTestServer({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' }, { dispatcher: true });
    receiver = await TestReceiver.start();
  });
  after(async () => {
    pg.Client.prototype.query = original;
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

    const statements: { text: string; values: unknown[] }[] = (sent = []);
    try {
      await enqueue(
        db,
        integration,
        [1, 2, 3].map(() => ({ kind: 'event' as const, body: exportedBody(tenant.orgId) })),
      );
      await receiver.waitFor(3, 10_000);
      // the outcomes are written after the receiver answered
      for (let i = 0; i < 100 && !statements.some((s) => s.text.includes('delivery_attempts')); i++) await new Promise((r) => setTimeout(r, 20));
    } finally {
      sent = null;
    }
    const claim = statements.find((s) => s.text.includes('WITH RECURSIVE') && s.text.includes('claimed AS'));
    const outcome = statements.find((s) => s.text.includes('INSERT INTO delivery_attempts') && s.text.includes('UPDATE deliveries d'));
    expect(claim, 'the claim statement').to.not.equal(undefined);
    expect(outcome, 'the outcome statement').to.not.equal(undefined);

    const client = await srv.database.handle.pool.connect();
    try {
      for (const [name, s] of [
        ['claim', claim!],
        ['outcome', outcome!],
      ] as const) {
        await client.query('BEGIN');
        try {
          await client.query('SET LOCAL plan_cache_mode = force_generic_plan');
          await client.query(`PREPARE plan_check AS ${s.text}`);
          // EXECUTE takes no bind parameters: each value in pg's text form, as an untyped literal
          const literal = (v: unknown): string => {
            const text = prepareValue(v) as string | null;
            return text === null ? 'NULL' : client.escapeLiteral(String(text));
          };
          const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
            `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE plan_check(${s.values.map(literal).join(', ')})`,
          );
          const plan = rows[0]!['QUERY PLAN'][0].Plan;
          const buffers = (plan['Shared Hit Blocks'] ?? 0) + (plan['Shared Read Blocks'] ?? 0);
          // STORED deliveries fill hundreds of pages: a statement that walks them shows it
          expect(buffers, `${name}: ${JSON.stringify(plan)}`).to.be.lessThan(150);
        } finally {
          await client.query('ROLLBACK');
          await client.query('DEALLOCATE ALL');
        }
      }
    } finally {
      client.release();
    }
  });
});
