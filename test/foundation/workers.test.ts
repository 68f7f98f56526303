// `trackway serve --workers N` (node:cluster) as a person runs it: a child
// process on the embedded database, events and identifies through the shared
// port, a worker killed and replaced, a graceful stop under load.
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { ConfigError } from '../../src/config.ts';
import { defaultWorkers, workerIngestInFlight, workerPoolSize } from '../../src/cluster/pool-size.ts';
import { WORKER_V8_FLAGS, workerExecArgv } from '../../src/cluster/worker-flags.ts';
import { createDb, type DbHandle } from '../../src/db/database.ts';
import { runningPostmaster, startEmbedded } from '../../src/db/embedded.ts';
import { freePort } from '../reliability/child.ts';
import { startLoad, storedMarkers, until } from '../reliability/load.ts';
import { b64url } from '../support/payload.ts';
import type { OrgId } from '../../src/db/tenancy.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

interface Answer {
  status: number;
  worker: string | undefined;
  body: string;
}

/** One request on a connection of its own (node's fetch would keep one connection, and so one worker). */
function request(port: number, method: string, urlPath: string, body?: unknown): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(
      { host: '127.0.0.1', port, method, path: urlPath, agent: false, headers: data ? { 'content-type': 'application/json' } : {} },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, worker: res.headers['x-trackway-worker'] as string | undefined, body: text }));
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('trackway serve --workers 2 (node:cluster)', function () {
  this.timeout(180_000);
  let dataDir: string;
  let port: number;
  let server: ChildProcess | undefined;
  let out = '';
  let db: DbHandle | undefined;
  let orgId: OrgId;
  let pids: number[] = [];

  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'trackway-workers-'));
    port = await freePort();
  });

  after(async () => {
    await db?.close();
    if (server && server.exitCode === null) server.kill('SIGKILL');
    for (const pid of pids) if (alive(pid)) process.kill(pid, 'SIGKILL');
    const pg = runningPostmaster(path.join(dataDir, 'pg'));
    if (pg) {
      process.kill(pg, 'SIGINT');
      for (let i = 0; i < 100 && runningPostmaster(path.join(dataDir, 'pg')); i++) await new Promise((r) => setTimeout(r, 100));
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  function env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
    const e: NodeJS.ProcessEnv = {
      ...process.env,
      TRACKWAY_DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      GEOIP_DB: 'off',
      // one test address stands for many clients under load: the tracking limits would refuse it
      TRACKING_RATE_LIMIT: 'off',
      ...extra,
    };
    delete e.DATABASE_URL; // the primary owns the embedded database here
    return e;
  }

  function start(args: string[], extra: Record<string, string> = {}): ChildProcess {
    out = '';
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'serve', ...args], {
      cwd: ROOT,
      env: env(extra),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    return child;
  }

  function exitOf(child: ChildProcess): Promise<number | null> {
    if (child.exitCode !== null) return Promise.resolve(child.exitCode);
    return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }

  it('defaults to one worker per core (at most 8) and sizes each pool within half of max_connections', () => {
    expect([1, 2, 4, 8, 32].map((cores) => defaultWorkers(cores))).to.deep.equal([1, 2, 4, 8, 8]);
    expect(workerPoolSize(200, 1)).to.equal(40); // the embedded cluster: like a single process
    expect(workerPoolSize(200, 2)).to.equal(40);
    expect(workerPoolSize(200, 8)).to.equal(11); // 8 × (11 + LISTEN) = 96 ≤ 100
    expect(workerPoolSize(100, 4)).to.equal(11); // PostgreSQL's default max_connections
    expect(() => workerPoolSize(100, 16)).to.throw(ConfigError, /max_connections \(100\) leaves 2 connections per worker/);
  });

  it('shares the host’s ingest batches in flight (INGEST_IN_FLIGHT) among the workers, at least one each', () => {
    // the default of 2: a single process writes two at once, each of two workers one
    expect([1, 2, 4, 8].map((workers) => workerIngestInFlight(2, workers))).to.deep.equal([2, 1, 1, 1]);
    expect([1, 2, 3, 8].map((workers) => workerIngestInFlight(8, workers))).to.deep.equal([8, 4, 3, 1]);
  });

  it('gives the workers a tighter old generation, unless the command line sets the flag itself', () => {
    expect(WORKER_V8_FLAGS).to.deep.equal(['--heap-growing-percent=100']);
    expect(workerExecArgv(['--import', 'tsx'])).to.deep.equal(['--import', 'tsx', '--heap-growing-percent=100']);
    expect(workerExecArgv(['--heap-growing-percent=40'])).to.deep.equal(['--heap-growing-percent=40']);
    expect(workerExecArgv(['--heap_growing_percent=0'])).to.deep.equal(['--heap_growing_percent=0']);
  });

  it('refuses a --workers that is not a whole number from 1 to 64', async () => {
    for (const bad of ['0', '65', '1.5']) {
      const child = start(['--workers', bad]);
      expect(await exitOf(child), bad).to.equal(2);
      expect(out, bad).to.include(`trackway: --workers: "${bad}" is not a whole number from 1 to 64`);
    }
  });

  it('stops everything, with the reason, when a worker cannot start', async () => {
    const child = start(['--workers', '2'], { GEOIP_DB: path.join(dataDir, 'no-such.mmdb') });
    expect(await exitOf(child), out).to.equal(2);
    expect(out).to.match(/trackway: GEOIP_DB: .*no-such\.mmdb/);
    expect(out).to.match(/trackway: worker \d \(pid \d+\) exited while starting \(exit code 2\); stopping/);
    expect(runningPostmaster(path.join(dataDir, 'pg')), 'the embedded PostgreSQL is stopped again').to.equal(undefined);
  });

  it('serves from two worker processes on the shared port, commits every event and identify, and adds up /metrics', async () => {
    server = start(['--workers', '2']);
    await until(() => out.includes('Trackway is listening') || server!.exitCode !== null, 90_000, 'serve to start');
    expect(server.exitCode, out).to.equal(null);
    const m = /Workers {5}2 \(pids (\d+), (\d+)\); worker 1 also runs the webhook dispatcher and the periodic jobs/.exec(out);
    expect(m, out).to.not.equal(null);
    pids = [Number(m![1]), Number(m![2])];
    expect(pids[0]).to.not.equal(pids[1]);
    expect(pids).to.not.include(server.pid);
    const argv = (pid: number) => fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    for (const pid of pids) expect(argv(pid), `worker ${pid}'s command line`).to.include('--heap-growing-percent=100');
    expect(argv(server.pid!), 'the primary’s command line').to.not.include('--heap-growing-percent=100');

    // the database the primary started, as the CLI would find it
    const info = JSON.parse(fs.readFileSync(path.join(dataDir, 'postgres.json'), 'utf8')) as {
      host: string;
      port: number;
      user: string;
      password: string;
    };
    db = createDb(`postgres://${info.user}:${encodeURIComponent(info.password)}@${info.host}:${info.port}/trackway`, { max: 2, onError: () => {} });
    const token = randomBytes(16).toString('hex');
    const org = await db.db
      .insertInto('organisations')
      .values({
        token,
        token_hash: createHash('sha256').update(token).digest(),
        domain: 'workers.example',
        domain_key: `workers-${Date.now()}.example`,
        wid: null,
        referer: null,
        created_by: null,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    orgId = org.id;

    const answers: Answer[] = [];
    const sends: (() => Promise<Answer>)[] = [];
    for (let v = 0; v < 10; v++) {
      sends.push(() => request(port, 'GET', `/jsv1/identify/${orgId}/r-${v}/c-${v}/${b64url({ email: `c-${v}@workers.example` })}`));
      for (let e = 0; e < 4; e++)
        sends.push(() => request(port, 'POST', `/jsv1/${orgId}/r-${v}/c-${v}/null/event/view`, { page: `https://workers.example/v${v}/e${e}` }));
    }
    // and six page views from a browser driven by automation (the pixel, marked as the tracker marks them): answered, never stored, counted
    const page = encodeURIComponent('https://workers.example/bot');
    for (let b = 0; b < 6; b++) sends.push(() => request(port, 'GET', `/jsv1/${orgId}/r-bot/c-bot-${b}/null/event/view?page=${page}&webdriver=1`));
    for (let i = 0; i < sends.length; i += 5) answers.push(...(await Promise.all(sends.slice(i, i + 5).map((s) => s()))));
    expect(
      answers.map((a) => a.status).filter((s) => s !== 200 && s !== 202),
      'every request acknowledged',
    ).to.deep.equal([]);
    expect(new Set(answers.map((a) => a.worker)), 'both workers answered').to.deep.equal(new Set(['1', '2']));

    const events = await db.db.selectFrom('events').select(['body']).where('org_id', '=', orgId).execute();
    expect(events.length).to.equal(40);
    const links = await db.db.selectFrom('visitor_contacts').select(['core_id']).where('org_id', '=', orgId).execute();
    expect(links.map((l) => l.core_id).sort()).to.deep.equal(Array.from({ length: 10 }, (_, v) => `c-${v}`).sort());

    // one scrape, whichever worker takes it, counts every worker's requests
    for (let i = 0; i < 2; i++) {
      const scrape = await request(port, 'GET', '/metrics');
      expect(scrape.status).to.equal(200);
      expect(scrape.body).to.match(/^trackway_cluster_workers 2$/m);
      expect(scrape.body).to.match(/^trackway_http_requests_total\{operation="recordViewEvent",status="202"\} 40$/m);
      expect(scrape.body).to.match(/^trackway_http_requests_total\{operation="identifyVisitor",status="200"\} 10$/m);
      expect(scrape.body).to.match(/^trackway_bot_requests_total\{reason="webdriver"\} 6$/m);
    }
  });

  it('replaces a worker that is killed, under the same number, with the other one serving meanwhile', async () => {
    const [, second] = pids as [number, number];
    process.kill(second, 'SIGKILL');
    await until(() => /"worker":2,.*"signal":"SIGKILL".*worker exited unexpectedly; starting a new one/.test(out), 10_000, 'the primary to notice');
    await until(() => /"worker":2,"pid":\d+,"msg":"worker restarted and serving"/.test(out), 60_000, 'a new worker 2');
    const replacement = Number(/"worker":2,"pid":(\d+),"msg":"worker restarted and serving"/.exec(out)![1]);
    expect(replacement).to.not.equal(second);
    expect(alive(second)).to.equal(false);
    pids = [pids[0]!, replacement];
    const seen = new Set<string | undefined>();
    for (let i = 0; i < 8; i++) {
      const a = await request(port, 'POST', `/jsv1/${orgId}/r-x/c-x/null/event/view`, { page: `https://workers.example/after/${i}` });
      expect(a.status).to.equal(202);
      seen.add(a.worker);
    }
    expect(seen).to.deep.equal(new Set(['1', '2']));
    const scrape = await request(port, 'GET', '/metrics');
    expect(scrape.body).to.match(/^trackway_cluster_workers 2$/m);
  });

  it('stops on SIGTERM under load: every acknowledged event committed, both workers stopped, then the embedded PostgreSQL', async () => {
    await db!.close();
    db = undefined;
    const load = startLoad({ base: () => `http://127.0.0.1:${port}`, orgId, workers: 6, eventsPerVisitor: 6, tag: 'stop', pauseMs: 2 });
    await until(() => load.acked >= 150, 60_000, 'the load to get going');
    server!.kill('SIGTERM');
    const code = await exitOf(server!);
    const figures = await load.stop();
    expect(code, out).to.equal(0);
    expect(out.match(/"msg":"worker stopping"/g) ?? [], out).to.have.length(2);
    expect(out).to.include('stopping the embedded PostgreSQL');
    expect(pids.filter(alive), 'worker processes left').to.deep.equal([]);
    expect(runningPostmaster(path.join(dataDir, 'pg'))).to.equal(undefined);
    // every answer was a 2xx or none at all (the server was going away)
    expect(figures.refusals.map((r) => `${r.status} ${r.body}`)).to.deep.equal([]);

    const cluster = await startEmbedded({ dataDir });
    const check = createDb(cluster.url('trackway'), { max: 2, onError: () => {} });
    try {
      const stored = await storedMarkers(check.db, orgId);
      const lost = figures.acknowledged.filter((u) => !stored.has(u));
      expect(lost, 'acknowledged but not stored').to.deep.equal([]);
      console.log(
        `      graceful stop: ${figures.acknowledged.length} events acknowledged, all stored; ${figures.statuses.get(0) ?? 0} requests found no server while and after it stopped`,
      );
    } finally {
      await check.close();
      await cluster.stop();
    }
  });

  it('runs a dispatcher in every worker with WEBHOOK_DISPATCH_WORKERS=all (one, in worker 1, by default)', async () => {
    const [first, second] = pids as [number, number];
    expect(first).to.be.a('number');
    expect(second).to.be.a('number');
    server = start(['--workers', '2'], { WEBHOOK_DISPATCH_WORKERS: 'all' });
    await until(() => out.includes('Trackway is listening') || server!.exitCode !== null, 90_000, 'serve to start');
    expect(server.exitCode, out).to.equal(null);
    const m = /Workers {5}2 \(pids (\d+), (\d+)\); every worker also runs a webhook dispatcher, worker 1 the periodic jobs/.exec(out);
    expect(m, out).to.not.equal(null);
    pids = [Number(m![1]), Number(m![2])];
    // each worker logs "worker serving" on its own stdout: the banner may be read before the second one
    const servingLines = () => [
      ...out.matchAll(
        /"worker":(\d),"pid":\d+,"pool":\d+,"ingestInFlight":(\d+),"dispatcher":(true|false),"jobs":(true|false),"msg":"worker serving"/g,
      ),
    ];
    await until(() => servingLines().length >= 2 || server!.exitCode !== null, 30_000, 'both workers to log that they serve');
    const serving = servingLines();
    // and the host's two ingest batches in flight (INGEST_IN_FLIGHT's default) are one per worker
    expect(serving.map((s) => `${s[1]} ${s[2]} ${s[3]} ${s[4]}`).sort(), out).to.deep.equal(['1 1 true true', '2 1 true false']);
    server.kill('SIGTERM');
    expect(await exitOf(server), out).to.equal(0);
    expect(pids.filter(alive), 'worker processes left').to.deep.equal([]);
  });
});
