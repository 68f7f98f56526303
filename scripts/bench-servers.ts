// The processes `npm run bench` measures: the service, the bare node:http
// server and the durable-limit server, each a child process on 127.0.0.1.
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { transformSync } from 'esbuild';
import { processTree } from './bench-proc.ts';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));

export interface Server {
  name: 'bare' | 'limit' | 'service';
  base: string;
  pid: number;
  child: ChildProcess;
}

export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

export async function waitFor(url: string, child: ChildProcess, seconds = 120): Promise<void> {
  for (let i = 0; i < seconds * 10; i++) {
    if (child.exitCode !== null) throw new Error(`${url}: process exited with ${child.exitCode}`);
    try {
      const r = await fetch(url);
      await r.arrayBuffer();
      if (r.status < 500) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not come up in ${seconds} s`);
}

/** waitFor, and a child that never came up is stopped */
async function ready(url: string, child: ChildProcess, seconds?: number): Promise<void> {
  try {
    await waitFor(url, child, seconds);
  } catch (e) {
    await stopProcess(child, 10_000);
    throw e;
  }
}

/** SIGTERM, then (after graceMs) SIGKILL to whatever is left of the tree this child started. */
export async function stopProcess(child: ChildProcess, graceMs = 30_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || !child.pid) return;
  const tree = processTree(child.pid).map((p) => p.pid);
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const timer = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), graceMs).unref());
  if ((await Promise.race([exited, timer])) === 'timeout') {
    for (const pid of tree) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    await exited;
  }
}

/** A TypeScript script of ours as plain JavaScript, to run with `node -e` (no tsx in the measured process). */
export function compiledScript(file: string): string {
  const source = fs.readFileSync(path.join(ROOT, 'scripts', file), 'utf8');
  return transformSync(source, { loader: 'ts', format: 'esm', target: 'node20' }).code;
}

/** Runs a script from compiledScript() with ROOT as cwd, so its imports resolve from our node_modules. */
export function spawnScript(code: string, env: Record<string, string>, stdio: 'inherit' | 'pipe' = 'inherit'): ChildProcess {
  return spawn(process.execPath, ['--input-type=module', '-e', code], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: stdio === 'pipe' ? ['pipe', 'pipe', 'inherit'] : ['ignore', 'inherit', 'inherit'],
  });
}

// ---- the service -------------------------------------------------------------

export interface ServiceCommandOptions {
  /** `--service-cmd`: the whole command line up to and including `serve` */
  cmd?: string | undefined;
  /** `--workers N`: appended as `--workers N` */
  workers?: number | undefined;
  /** `--cpu-prof`: V8 CPU profiles written here (needs a command that starts with node) */
  cpuProfDir?: string | undefined;
}

export interface ServiceCommand {
  command: string;
  args: string[];
  /** as printed and recorded */
  line: string;
  /** where the default came from */
  how: string;
}

const COMPILED_ENTRIES = ['dist/main.js', 'dist/src/main.js'];

/**
 * The one place that decides how the service is started. Default: the
 * compiled build when there is one (`dist/main.js` or `dist/src/main.js`),
 * else TypeScript through tsx (`node --import tsx src/main.ts serve`).
 * `--service-cmd "..."` replaces it (a leading `node` means this node);
 * `--workers N` appends `--workers N`.
 */
export function serviceCommand(opts: ServiceCommandOptions): ServiceCommand {
  let words: string[];
  let how: string;
  if (opts.cmd) {
    words = opts.cmd.trim().split(/\s+/);
    if (words[0] === 'node') words[0] = process.execPath;
    how = '--service-cmd';
  } else {
    const compiled = COMPILED_ENTRIES.find((f) => fs.existsSync(path.join(ROOT, f)));
    words = compiled ? [process.execPath, compiled, 'serve'] : [process.execPath, '--import', 'tsx', 'src/main.ts', 'serve'];
    how = compiled ? `compiled build (${compiled})` : 'TypeScript through tsx (no dist/ build)';
  }
  if (opts.workers !== undefined) words.push('--workers', String(opts.workers));
  if (opts.cpuProfDir) {
    if (words[0] !== process.execPath) {
      throw new Error('--cpu-prof needs a service command that starts with node (node does not take --cpu-prof from NODE_OPTIONS)');
    }
    // cluster workers inherit these through process.execArgv: one profile per process
    words.splice(1, 0, '--cpu-prof', `--cpu-prof-dir=${opts.cpuProfDir}`);
  }
  const [command, ...args] = words as [string, ...string[]];
  return { command, args, line: words.map((w) => (w === process.execPath ? 'node' : w)).join(' '), how };
}

/** The service's environment in the bench (BENCHMARKS.md "Method"). */
export function serviceEnvironment(o: {
  dataDir: string;
  port: number;
  databaseUrl?: string | undefined;
  dispatchConcurrency?: number | undefined;
}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    TRACKWAY_DATA_DIR: o.dataDir,
    PORT: String(o.port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    // requests carry public client addresses in X-Forwarded-For, so every
    // event is geo-located as it would be behind a load balancer
    TRUST_PROXY: 'true',
    // the limiters run (their cost is measured) but never throttle the bench's 8 client addresses
    TRACKING_RATE_LIMIT: '1000000000/1s',
    TRACKING_IDENTIFY_RATE_LIMIT: '1000000000/1s',
    TRACKING_IDENTIFY_NETWORK_RATE_LIMIT: '1000000000/1s',
    TRACKWAY_BOOTSTRAP_PLATFORM: 'bench',
    TRACKWAY_BOOTSTRAP_EMAIL: 'bench@bench.example',
    TRACKWAY_BOOTSTRAP_PASSWORD: 'bench-password-1',
  };
  if (o.databaseUrl) env.DATABASE_URL = o.databaseUrl;
  else delete env.DATABASE_URL;
  if (o.dispatchConcurrency !== undefined) env.WEBHOOK_CONCURRENCY = String(o.dispatchConcurrency);
  return env;
}

export async function startService(cmd: ServiceCommand, env: NodeJS.ProcessEnv, port: number): Promise<Server> {
  const child = spawn(cmd.command, cmd.args, { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'inherit'] });
  const base = `http://127.0.0.1:${port}`;
  await ready(`${base}/readyz`, child, 300);
  return { name: 'service', base, pid: child.pid!, child };
}

// ---- talking to the service -------------------------------------------------

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the bench reads the API's JSON answers untyped
export async function json(method: string, url: string, body?: unknown, token?: string): Promise<any> {
  const r = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  if (r.status >= 300) throw new Error(`${method} ${url} → ${r.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/** The bench's platform account on a service, and a merchant organisation registered through it. */
export async function organisation(base: string, email: string, domain: string): Promise<{ org: number; token: string }> {
  const login = await json('POST', `${base}/v1/rest/bench/users/login`, { email: 'bench@bench.example', password: 'bench-password-1' });
  const token = login.bearer_token as string;
  const reg = await json('POST', `${base}/v1/rest/bench/users/register`, { email, domain }, token);
  return { org: reg.organisation.id as number, token };
}

// ---- the references ----------------------------------------------------------

const BARE_SERVER = `
const http = require('node:http');
http.createServer({ keepAliveTimeout: 65000 }, (req, res) => {
  req.on('data', () => {});
  req.on('end', () => { res.statusCode = 204; res.end(); });
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

/** node:http that reads the body and answers 204: no work at all. */
export async function startBare(port: number): Promise<Server> {
  const child = spawn(process.execPath, ['-e', BARE_SERVER], { env: { PORT: String(port) }, stdio: 'inherit' });
  const base = `http://127.0.0.1:${port}`;
  await ready(base, child);
  return { name: 'bare', base, pid: child.pid!, child };
}

export interface LimitOptions {
  databaseUrl: string;
  table: string;
  maxBatch: number;
  inFlight: number;
}

/** The durable limit: scripts/bench-limit-server.ts, as plain JavaScript. */
export async function startLimit(port: number, opts: LimitOptions): Promise<Server> {
  const child = spawnScript(compiledScript('bench-limit-server.ts'), {
    PORT: String(port),
    DATABASE_URL: opts.databaseUrl,
    LIMIT_TABLE: opts.table,
    LIMIT_MAX_BATCH: String(opts.maxBatch),
    LIMIT_IN_FLIGHT: String(opts.inFlight),
  });
  const base = `http://127.0.0.1:${port}`;
  await ready(`${base}/stats`, child);
  return { name: 'limit', base, pid: child.pid!, child };
}
