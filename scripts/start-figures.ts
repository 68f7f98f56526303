// Start time and memory of `trackway serve`: tsx against the compiled build,
// one process against a cluster, geo data on and off. For each variant: the
// time from spawn to the banner, the resident memory of every process of the
// tree (primary, workers, helpers such as tsx's esbuild service) once idle,
// and the peak while a little load runs (view events from new visitors,
// 16 at a time). All variants run on one PostgreSQL (an embedded cluster this
// script starts in a temp dir), so PostgreSQL's own start is not counted.
//
//   npm run build && node --import tsx scripts/start-figures.ts [--runs 3] [--events 3000]
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createDb, migrate } from '../src/db/database.ts';
import { startEmbedded } from '../src/db/embedded.ts';
import { buildState, ROOT } from './build-state.js';

const { values: args } = parseArgs({ options: { runs: { type: 'string', default: '3' }, events: { type: 'string', default: '3000' } } });
const RUNS = Number(args.runs);
const EVENTS = Number(args.events);

interface Variant {
  name: string;
  /** node's arguments, or with `npm` npm's (start time only: npm and sh are not the service) */
  command: string[];
  npm?: boolean;
  workers: number;
  geo: 'off' | 'default';
}

interface Proc {
  pid: number;
  name: string;
  rssMb: number;
}

function rssOf(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

/** the process and its descendants, with their resident memory */
function tree(pid: number, name = 'primary'): Proc[] {
  let out: Proc[];
  try {
    out = [{ pid, name, rssMb: rssOf(pid) }];
  } catch {
    return [];
  }
  let children: number[] = [];
  try {
    children = fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    // gone
  }
  let w = 0;
  for (const c of children) {
    const comm = fs.readFileSync(`/proc/${c}/comm`, 'utf8').trim();
    out.push(...tree(c, comm === 'node' ? `worker ${++w}` : comm));
  }
  return out;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function start(v: Variant, env: NodeJS.ProcessEnv): Promise<{ proc: ChildProcess; ms: number }> {
  const t0 = performance.now();
  const proc = v.npm
    ? spawn('npm', [...v.command, '--', '--workers', String(v.workers)], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] })
    : spawn(process.execPath, [...v.command, 'serve', '--workers', String(v.workers)], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
  while (!out.includes('Trackway is listening')) {
    if (proc.exitCode !== null) throw new Error(`${v.name} exited: ${out}`);
    await sleep(5);
  }
  return { proc, ms: performance.now() - t0 };
}

/** the trackway process under npm (npm → sh → node) */
function service(pid: number): number {
  for (const p of tree(pid)) {
    const cmd = fs.readFileSync(`/proc/${p.pid}/cmdline`, 'utf8');
    if (/(main\.ts|start\.js)\0serve/.test(cmd)) return p.pid;
  }
  return pid;
}

async function stop(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null) return;
  const exited = new Promise((r) => proc.once('exit', r));
  process.kill(service(proc.pid!), 'SIGTERM');
  await exited;
}

async function load(base: string, orgId: number, pid: number): Promise<Proc[]> {
  let next = 0;
  let peak: Proc[] = tree(pid);
  const sample = setInterval(() => {
    const now = tree(pid);
    if (now.reduce((s, p) => s + p.rssMb, 0) > peak.reduce((s, p) => s + p.rssMb, 0)) peak = now;
  }, 100);
  const clients = ['193.0.6.139', '8.8.4.4', '2001:200::1', '81.2.69.160', '1.1.1.1', '2a00:1450:4001::1'];
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < EVENTS) {
        const i = next++;
        const r = await fetch(`${base}/jsv1/${orgId}/r-${i}/c-${i}/null/event/view`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-forwarded-for': clients[i % clients.length]! },
          body: JSON.stringify({ page: `https://figures.example/p/${i}` }),
        });
        await r.arrayBuffer();
        if (r.status !== 202) throw new Error(`event answered ${r.status}`);
      }
    }),
  );
  clearInterval(sample);
  return peak;
}

const fmt = (procs: Proc[]) =>
  procs.map((p) => `${p.name} ${p.rssMb.toFixed(0)}`).join(', ') + ` (total ${procs.reduce((s, p) => s + p.rssMb, 0).toFixed(0)} MB)`;

async function main(): Promise<void> {
  if (!buildState().fresh) throw new Error('dist/ is not a build of the current sources: run `npm run build` first');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'trackway-figures-'));
  const cluster = await startEmbedded({ dataDir: dir, ephemeral: true });
  const url = cluster.url('postgres');
  const handle = createDb(url, { max: 2 });
  try {
    await migrate(handle.db);
    const token = randomBytes(16).toString('hex');
    const org = await handle.db
      .insertInto('organisations')
      .values({
        token,
        token_hash: createHash('sha256').update(token).digest(),
        domain: 'figures.example',
        domain_key: `figures-${Date.now()}.example`,
        wid: null,
        referer: null,
        created_by: null,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const variants: Variant[] = [
      // `npm start` before (tsx, now `npm run dev`) and now (compiled), one process and the default cluster
      { name: 'npm run dev', command: ['run', 'dev'], npm: true, workers: 1, geo: 'default' },
      { name: 'npm start', command: ['start'], npm: true, workers: 1, geo: 'default' },
      { name: 'npm start', command: ['start'], npm: true, workers: 2, geo: 'default' },
    ];
    for (const geo of ['off', 'default'] as const) {
      for (const workers of [1, 2]) {
        variants.push({ name: 'tsx', command: ['--import', 'tsx', 'src/main.ts'], workers, geo });
        variants.push({ name: 'compiled', command: ['dist/src/main.js'], workers, geo });
      }
    }
    console.log(
      `node ${process.version}, ${os.availableParallelism()} cores, load average ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}`,
    );
    for (const v of variants) {
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        DATABASE_URL: url,
        TRACKWAY_DATA_DIR: dir,
        PORT: '18490',
        HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
        TRUST_PROXY: 'true',
        TRACKWAY_SECRET_KEY: Buffer.alloc(32, 3).toString('base64'),
      };
      if (v.geo === 'off') env.GEOIP_DB = 'off';
      else delete env.GEOIP_DB;
      const times: number[] = [];
      let idle: Proc[] = [];
      let peak: Proc[] = [];
      for (let r = 0; r < RUNS; r++) {
        const { proc, ms } = await start(v, env);
        times.push(ms);
        if (r === RUNS - 1 && !v.npm) {
          await sleep(3000); // the in-memory bundles (tsx), the first partition maintenance, GC settle
          idle = tree(proc.pid!);
          peak = await load('http://127.0.0.1:18490', org.id, proc.pid!);
        }
        await stop(proc);
      }
      times.sort((a, b) => a - b);
      const median = times[Math.floor(times.length / 2)]!;
      console.log(
        `\n${v.name}, --workers ${v.workers}, GEOIP_DB=${v.geo}: start ${Math.round(median)} ms (median of ${RUNS}: ${times.map(Math.round).join(', ')})`,
      );
      if (v.npm) continue;
      console.log(`  idle RSS MB:               ${fmt(idle)}`);
      console.log(`  peak RSS MB (${EVENTS} events): ${fmt(peak)}`);
    }
  } finally {
    await handle.close();
    await cluster.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
