// A measurement, not a test: what the plain batch costs with and without the
// process's memory of fresh visitors (src/identity/fresh-visitors.service.ts),
// on one connection with nothing else running, so that CPU per event is
// read without the contention of `npm run bench`'s throughput rounds.
// 1,000 stored visitors come back in batches of 10 (NEW=1: a new visitor
// per event instead); rounds alternate without → with; PostgreSQL CPU is
// that of the test database's backends (/proc), Node's the process's own.
//
//   npx mocha scripts/bench-fresh-visitors.ts            (N=20000 events per round)
//   NEW=1 npx mocha scripts/bench-fresh-visitors.ts
//
// Run through mocha for the test harness (an embedded PostgreSQL, or
// DATABASE_URL's server, with the schema); BENCHMARKS.md quotes its output.
import fs from 'node:fs';
import { sql } from 'kysely';
import { FreshVisitors } from '../src/identity/fresh-visitors.service.ts';
import { storePlainBatch } from '../src/tracking/plain-batch.service.ts';
import { newAccount, newMerchant } from '../test/support/accounts.ts';
import { startTestServer } from '../test/support/harness.ts';
import { pageView } from '../test/support/ingest.ts';

const N = Number(process.env.N ?? 20_000);
const NEW = process.env.NEW === '1';

/** CPU time of a process, in ms (utime + stime, clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
}

it(`the plain batch with and without the memory of fresh visitors (${NEW ? 'new' : 'returning'} visitors)`, async function () {
  this.timeout(900_000);
  const srv = await startTestServer();
  try {
    const org = (await newMerchant(srv, await newAccount(srv))).organisation.id;
    const ev = (core: string) =>
      pageView(org, core, {
        userAgent: 'Mozilla/5.0 (X11; Linux x86_64) Chrome/130',
        body: { page: 'https://shop.example/products/1', title: 'A product page' },
      });
    const cores = Array.from({ length: 1000 }, (_, i) => `core-${i.toString().padStart(6, '0')}-abcdefabcdef`);
    for (let i = 0; i < cores.length; i += 10) await storePlainBatch(srv.deps.db, cores.slice(i, i + 10).map(ev));
    const backends = async () =>
      (await sql<{ pid: number }>`SELECT pid FROM pg_stat_activity WHERE datname = current_database()`.execute(srv.deps.db)).rows.map((r) => r.pid);
    const pgMs = async () => {
      let t = 0;
      for (const pid of await backends()) {
        try {
          t += cpuMs(pid);
        } catch {
          // ended meanwhile
        }
      }
      return t;
    };
    let seq = 0;
    for (const round of [1, 2, 3]) {
      for (const mode of ['without', 'with'] as const) {
        const fresh = mode === 'with' ? new FreshVisitors() : undefined;
        const pg0 = await pgMs();
        const node0 = process.cpuUsage();
        const t0 = performance.now();
        for (let i = 0; i < N; i += 10) {
          const batch = Array.from({ length: 10 }, (_, j) => ev(NEW ? `new-${++seq}-abcdefabcdefabcdef` : cores[(i * 7 + j * 131) % cores.length]!));
          await storePlainBatch(srv.deps.db, batch, fresh);
        }
        const node = process.cpuUsage(node0);
        const perEvent = (x: number) => (x / N).toFixed(1);
        console.log(
          `round ${round} ${mode} memory: PostgreSQL ${perEvent(((await pgMs()) - pg0) * 1000)} µs/event, ` +
            `Node ${perEvent(node.user + node.system)} µs/event, wall ${perEvent((performance.now() - t0) * 1000)} µs/event`,
        );
      }
    }
  } finally {
    await srv.stop();
  }
});
