// /proc accounting for `npm run bench`: CPU time and RSS of a process tree
// (a server and every process under it, e.g. cluster workers; a PostgreSQL
// postmaster and its backends), read from /proc/<pid>/stat.
//
// CPU of a tree = Σ over its live processes of utime + stime + cutime +
// cstime. The c* fields hold the CPU of children that exited and were reaped
// (a backend that disconnected, an autovacuum worker that finished), so a
// delta of this sum over a round counts them too, and nothing twice.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';

function getconf(name: string, fallback: number): number {
  const r = spawnSync('getconf', [name], { encoding: 'utf8' });
  const n = Number(r.stdout?.trim());
  return r.status === 0 && n > 0 ? n : fallback;
}

const CLK_TCK = getconf('CLK_TCK', 100);
const PAGE_BYTES = getconf('PAGESIZE', 4096);

export interface ProcStat {
  pid: number;
  ppid: number;
  comm: string;
  /** utime + stime + cutime + cstime, in µs */
  cpuUs: number;
  rssBytes: number;
}

export function readStat(pid: number): ProcStat | undefined {
  let s: string;
  try {
    s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined; // gone
  }
  // comm may hold spaces and parentheses: it ends at the last ')'
  const close = s.lastIndexOf(')');
  const comm = s.slice(s.indexOf('(') + 1, close);
  const f = s.slice(close + 2).split(' '); // f[0] is field 3 (state)
  const field = (n: number) => Number(f[n - 3]);
  const ticks = field(14) + field(15) + field(16) + field(17);
  return { pid, ppid: field(4), comm, cpuUs: (ticks * 1e6) / CLK_TCK, rssBytes: field(24) * PAGE_BYTES };
}

function allStats(): ProcStat[] {
  const out: ProcStat[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const st = readStat(Number(name));
    if (st) out.push(st);
  }
  return out;
}

export interface TreeOptions {
  /** processes (and their subtrees) left out, e.g. a PostgreSQL the service started */
  exclude?: (p: ProcStat) => boolean;
}

/** The root and every live process under it. */
export function processTree(root: number, opts: TreeOptions = {}): ProcStat[] {
  const stats = allStats();
  const children = new Map<number, ProcStat[]>();
  let top: ProcStat | undefined;
  for (const st of stats) {
    if (st.pid === root) top = st;
    const list = children.get(st.ppid);
    if (list) list.push(st);
    else children.set(st.ppid, [st]);
  }
  if (!top) return [];
  const out: ProcStat[] = [];
  const stack = [top];
  while (stack.length) {
    const p = stack.pop()!;
    if (p !== top && opts.exclude?.(p)) continue;
    out.push(p);
    stack.push(...(children.get(p.pid) ?? []));
  }
  return out;
}

/** CPU (µs) used so far by a tree, reaped children included. */
export function treeCpuUs(root: number, opts: TreeOptions = {}): number {
  return processTree(root, opts).reduce((n, p) => n + p.cpuUs, 0);
}

export interface TreeRss {
  /** summed over the tree's processes, MB */
  sumMb: number;
  /** the largest single process, MB */
  maxMb: number;
  processes: number;
}

export function treeRss(root: number, opts: TreeOptions = {}): TreeRss {
  const tree = processTree(root, opts);
  const mb = tree.map((p) => p.rssBytes / 2 ** 20);
  return { sumMb: mb.reduce((a, b) => a + b, 0), maxMb: Math.max(0, ...mb), processes: tree.length };
}

/** A PostgreSQL server process started by the service, or any postgres process: never part of the service's own figures. */
export const notPostgres: TreeOptions = { exclude: (p) => p.comm === 'postgres' || p.comm === 'pg_ctl' };

/** The postmaster of a backend (its parent), if it runs on this machine and we can see it. */
export function postmasterOf(backendPid: number): number | undefined {
  const backend = readStat(backendPid);
  if (!backend || backend.comm !== 'postgres') return undefined;
  const parent = readStat(backend.ppid);
  return parent && parent.comm === 'postgres' ? parent.pid : undefined;
}

/**
 * What a process of the service is, for the RSS report: `primary` (the root),
 * `worker N` (a node:cluster worker, by the NODE_UNIQUE_ID cluster gives it:
 * the slot number while no worker was restarted; worker 1 runs the dispatcher
 * and the periodic jobs), else its comm.
 */
export function processRole(p: ProcStat, root: number): string {
  if (p.pid === root) return 'primary';
  try {
    const env = fs.readFileSync(`/proc/${p.pid}/environ`, 'latin1').split('\0');
    const id = env.find((e) => e.startsWith('NODE_UNIQUE_ID='))?.slice('NODE_UNIQUE_ID='.length);
    if (id) return `worker ${id}`;
  } catch {
    // gone, or not ours to read
  }
  return p.comm;
}

/**
 * A running peak of a tree's RSS, sampled on an interval while started; also
 * each process role's peak per `scenario` (set by the caller before each
 * scenario's rounds). RSS seldom shrinks: a process keeps what an earlier
 * scenario grew it to, so a scenario's peak is its own only when it ran first
 * (or alone, `--only`).
 */
export class RssPeak {
  sumMb = 0;
  maxMb = 0;
  processes = 0;
  /** the scenario being measured */
  scenario = '';
  /** scenario → role → peak RSS, MB */
  readonly byScenario = new Map<string, Map<string, number>>();
  private readonly roles = new Map<number, string>();
  private timer: NodeJS.Timeout | undefined;
  constructor(
    private readonly root: number,
    private readonly opts: TreeOptions = {},
  ) {}
  sample(): void {
    const tree = processTree(this.root, this.opts);
    let peaks = this.byScenario.get(this.scenario);
    if (!peaks) this.byScenario.set(this.scenario, (peaks = new Map()));
    let sum = 0;
    for (const p of tree) {
      const mb = p.rssBytes / 2 ** 20;
      sum += mb;
      this.maxMb = Math.max(this.maxMb, mb);
      let role = this.roles.get(p.pid);
      if (role === undefined) this.roles.set(p.pid, (role = processRole(p, this.root)));
      peaks.set(role, Math.max(peaks.get(role) ?? 0, mb));
    }
    if (sum > this.sumMb) {
      this.sumMb = sum;
      this.processes = tree.length;
    }
  }
  /** scenario → role → peak MB, roles in order (primary, worker 1, worker 2, …) */
  peaksByScenario(): Record<string, Record<string, number>> {
    const out: Record<string, Record<string, number>> = {};
    for (const [scenario, peaks] of this.byScenario) {
      const roles = [...peaks].sort(([a], [b]) => (a === 'primary' ? -1 : b === 'primary' ? 1 : a.localeCompare(b, 'en', { numeric: true })));
      out[scenario || '(unnamed)'] = Object.fromEntries(roles.map(([r, mb]) => [r, Math.round(mb)]));
    }
    return out;
  }
  start(everyMs = 250): void {
    this.sample();
    this.timer ??= setInterval(() => this.sample(), everyMs);
  }
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.sample();
  }
}
