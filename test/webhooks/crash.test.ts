// Crash and scale safety with real processes: `kill -9` of a server in the
// middle of a delivery (the delivery is made again once its lease expires),
// two dispatcher processes on one database (no webhook-id sent twice), and
// `serve --workers 2`'s two dispatchers splitting WEBHOOK_CONCURRENCY.
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { Cipher } from '../../src/platform/secrets.service.ts';
import { LOST_ATTEMPT_ERROR } from '../../src/webhooks/claims.repository.ts';
import { type TestDatabase, freshDatabase } from '../support/harness.ts';
import { TestReceiver } from '../support/receiver.ts';
import { freePort } from '../reliability/child.ts';
import { createIntegration, enqueue, eventually, matchedBody } from '../support/webhook-fixtures.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const KEY = Buffer.alloc(32, 9);

interface Child {
  proc: ChildProcess;
  output: () => string;
}

describe('webhook dispatch across processes', function () {
  this.timeout(60_000);
  let database: TestDatabase;
  let dataDir: string;
  const children: ChildProcess[] = [];
  const receivers: TestReceiver[] = [];

  beforeEach(async () => {
    database = await freshDatabase();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'trackway-dispatch-'));
  });
  afterEach(async () => {
    for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await Promise.all(receivers.splice(0).map((r) => r.close()));
    await database.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  /** `node --import tsx src/main.ts <command>` on the test database; resolves once it says it runs. */
  async function start(command: 'serve' | 'dispatch', env: Record<string, string> = {}, args: string[] = []): Promise<Child> {
    const proc = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', command, ...args], {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL: database.url,
        TRACKWAY_DATA_DIR: dataDir,
        TRACKWAY_SECRET_KEY: KEY.toString('base64'),
        PORT: '0',
        HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOK_RETRY_SCHEDULE: '100ms,200ms',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(proc);
    let out = '';
    proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const ready = command === 'serve' ? 'Trackway is listening' : 'Trackway dispatcher is running';
    await eventually(
      async () => {
        if (proc.exitCode !== null) throw new Error(`${command} exited with ${proc.exitCode}:\n${out}`);
        return out.includes(ready) ? true : undefined;
      },
      30_000,
      `${command} to start`,
    );
    return { proc, output: () => out };
  }

  function exited(proc: ChildProcess): Promise<void> {
    if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
    return new Promise((resolve) => proc.once('exit', () => resolve()));
  }

  async function tenantWith(endpoint: string, httpTimeout = 2) {
    const db = database.handle.db;
    const org = await db
      .insertInto('organisations')
      .values({
        token: `t-${Date.now()}-${Math.random()}`,
        token_hash: Buffer.from(String(Math.random())),
        domain: 'x.example',
        domain_key: `x-${Math.random()}.example`,
        wid: null,
        referer: null,
        created_by: null,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    return createIntegration(db, new Cipher(KEY), org.id, { endpoint, httpTimeout });
  }

  function deliveryRow(id: number) {
    return database.handle.db.selectFrom('deliveries').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  }

  it('delivers after a restart when the server was killed -9 in the middle of a delivery', async () => {
    // the first request is held open: the server dies while waiting for it
    const receiver = await TestReceiver.start((_req, i) => (i === 0 ? { status: 200, hold: true } : { status: 200 }));
    receivers.push(receiver);
    const hook = await tenantWith(receiver.url);
    const [id] = await enqueue(database.handle.db, hook, [{ kind: 'matched', body: matchedBody(hook.orgId) }]);

    // lease = httpTimeout (2 s) + margin (1 s)
    const first = await start('serve', { WEBHOOK_LEASE_MARGIN: '1s' });
    await receiver.waitFor(1, 20_000);
    first.proc.kill('SIGKILL');
    await exited(first.proc);
    const orphan = await deliveryRow(id!);
    expect(orphan).to.include({ status: 'pending', attempts_count: 1 });

    await start('serve', { WEBHOOK_LEASE_MARGIN: '1s' });
    const [held, again] = await receiver.waitFor(2, 20_000);
    expect(again!.headers['webhook-id']).to.equal(held!.headers['webhook-id']).and.equal(orphan.webhook_id);
    expect(again!.body).to.equal(held!.body);
    const done = await eventually(async () => {
      const d = await deliveryRow(id!);
      return d.status === 'delivered' ? d : undefined;
    });
    expect(done.attempts_count).to.equal(2);
    // the lost attempt is a row of delivery_attempts; the one that delivered is kept on the delivery
    const attempts = await database.handle.db.selectFrom('delivery_attempts').selectAll().where('delivery_id', '=', id!).orderBy('n').execute();
    expect(attempts.map((a) => [a.n, a.status_code, a.error])).to.deep.equal([[1, null, LOST_ATTEMPT_ERROR]]);
    expect(done).to.include({ delivered_status_code: 200 });
    expect(done.delivered_attempt_at).to.be.an.instanceOf(Date);
  });

  it('two dispatcher processes on one database send each delivery exactly once', async () => {
    const rs = await Promise.all([0, 1, 2].map(() => TestReceiver.start(() => ({ status: 204 }))));
    receivers.push(...rs);
    const hooks = await Promise.all(rs.map((r) => tenantWith(r.url)));
    await Promise.all([start('dispatch'), start('dispatch')]);

    const ids: number[] = [];
    for (let round = 0; round < 6; round++) {
      for (const hook of hooks) {
        ids.push(
          ...(await enqueue(
            database.handle.db,
            hook,
            Array.from({ length: 40 }, (_, i) => ({ kind: 'matched' as const, body: matchedBody(hook.orgId, `r${round}-${i}@example.com`) })),
          )),
        );
      }
    }
    expect(ids).to.have.length(720);
    await eventually(
      async () => {
        const n = await database.handle.db
          .selectFrom('deliveries')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('status', '=', 'delivered')
          .executeTakeFirstOrThrow();
        return Number(n.n) === ids.length ? true : undefined;
      },
      30_000,
      'every delivery to be delivered',
    );
    const received = rs.flatMap((r) => r.requests.map((q) => q.headers['webhook-id'] as string));
    const expected = await database.handle.db.selectFrom('deliveries').select('webhook_id').execute();
    expect(received).to.have.length(ids.length);
    expect(new Set(received).size).to.equal(ids.length);
    expect(new Set(received)).to.deep.equal(new Set(expected.map((e) => e.webhook_id)));
    const attempts = await database.handle.db.selectFrom('deliveries').select('id').where('attempts_count', '<>', 1).execute();
    expect(attempts).to.deep.equal([]);
  });
  it('serve --workers 2 with WEBHOOK_DISPATCH_WORKERS=all runs two dispatchers that together keep WEBHOOK_CONCURRENCY requests in flight to one integration', async () => {
    // every request is held: each dispatcher fills its part of the lane and can start no more
    const receiver = await TestReceiver.start(() => ({ status: 204, hold: true }));
    receivers.push(receiver);
    const hook = await tenantWith(receiver.url, 10);
    await enqueue(
      database.handle.db,
      hook,
      Array.from({ length: 60 }, (_, i) => ({ kind: 'matched' as const, body: matchedBody(hook.orgId, `w${i}@example.com`) })),
    );
    const port = await freePort();
    const serve = await start('serve', { PORT: String(port), WEBHOOK_DISPATCH_WORKERS: 'all' }, ['--workers', '2']);
    expect(serve.output()).to.match(/every worker also runs a webhook dispatcher/);
    // both dispatchers hold the integration's lane full (the host's metrics add them up)
    await eventually(
      async () => {
        const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        return /^trackway_webhook_integrations_at_share 2$/m.test(text) ? text : undefined;
      },
      20_000,
      'both dispatchers to fill their part of the lane',
    );
    // 8 (WEBHOOK_CONCURRENCY) in all: 4 + 4, where two dispatchers with the whole cap each would hold 16
    // (the lanes are full once their attempts are handed to the sending threads; the requests follow)
    await eventually(async () => (receiver.holding >= 8 ? true : undefined), 10_000, "the lanes' requests to arrive");
    await new Promise((r) => setTimeout(r, 500));
    expect(receiver.holding).to.equal(8);
    const claimed = await database.handle.db
      .selectFrom('deliveries')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('integration_id', '=', hook.id)
      .where('attempts_count', '=', 1)
      .executeTakeFirstOrThrow();
    expect(Number(claimed.n)).to.equal(8);
    receiver.releaseHeld({ status: 204 });
  });
});
