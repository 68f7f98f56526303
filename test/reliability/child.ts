// `trackway serve` as a child process (node --import tsx src/main.ts serve [args]) on
// a given database and a fixed loopback port, so that a restarted server
// answers at the same address. For the crash test: it can be killed -9.
import { type ChildProcess, spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '../..');

export interface ChildServer {
  proc: ChildProcess;
  url: string;
  output(): string;
  /** resolves once the process has exited */
  exited(): Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** Starts `trackway serve` (with `args`, e.g. `--workers 2`); resolves once it says it listens. */
export async function startServe(env: Record<string, string>, port: number, timeoutMs = 60_000, args: string[] = []): Promise<ChildServer> {
  const proc = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'serve', ...args], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => {
    if (proc.exitCode !== null || proc.signalCode !== null) resolve();
    else proc.once('exit', () => resolve());
  });
  const until = Date.now() + timeoutMs;
  while (!out.includes('Trackway is listening')) {
    if (proc.exitCode !== null) throw new Error(`trackway serve exited with ${proc.exitCode}:\n${out}`);
    if (Date.now() > until) {
      proc.kill('SIGKILL');
      throw new Error(`trackway serve did not start within ${timeoutMs} ms:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { proc, url: `http://127.0.0.1:${port}`, output: () => out, exited: () => exited };
}
