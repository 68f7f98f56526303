// Where the database is: DATABASE_URL, or the embedded cluster in the data
// dir. `serve` owns the embedded server it runs on (stops it on shutdown unless
// another `serve` on the same data dir is still running); CLI commands use a
// running one and stop only a server they started themselves.
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import { startEmbedded } from './embedded.ts';

export const EMBEDDED_DATABASE = 'trackway';

export interface DatabaseLocation {
  url: string;
  embedded: boolean;
  /** call once everything using the database is closed */
  release(): Promise<void>;
}

function runDir(dataDir: string): string {
  return path.join(dataDir, 'run');
}

function liveServers(dataDir: string): number[] {
  let names: string[] = [];
  try {
    names = fs.readdirSync(runDir(dataDir));
  } catch {
    return [];
  }
  const live: number[] = [];
  for (const name of names) {
    const pid = Number(/^serve-(\d+)$/.exec(name)?.[1]);
    if (!pid) continue;
    try {
      process.kill(pid, 0);
      live.push(pid);
    } catch {
      fs.rmSync(path.join(runDir(dataDir), name), { force: true }); // left by a killed server
    }
  }
  return live;
}

async function ensureDatabase(adminUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  client.on('error', () => {});
  await client.connect();
  try {
    const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (exists.rowCount === 0) {
      try {
        await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`);
      } catch (e) {
        if ((e as { code?: string }).code !== '42P04') throw e; // made concurrently
      }
    }
  } finally {
    await client.end();
  }
}

export async function locateDatabase(config: Config, log: Logger, role: 'serve' | 'cli'): Promise<DatabaseLocation> {
  if (config.databaseUrl) {
    return { url: config.databaseUrl, embedded: false, release: async () => {} };
  }
  // the CLI logs only warnings: a person running it hears of the slow first start on stderr
  const progress = role === 'cli' ? (line: string) => process.stderr.write(`trackway: ${line}\n`) : undefined;
  const cluster = await startEmbedded({ dataDir: config.dataDir, port: config.pgPort, log: (line) => log.info(line), progress });
  await ensureDatabase(cluster.url('postgres'), EMBEDDED_DATABASE);
  const url = cluster.url(EMBEDDED_DATABASE);
  if (role === 'cli') {
    return {
      url,
      embedded: true,
      release: async () => {
        if (cluster.startedHere) await cluster.stop();
      },
    };
  }
  fs.mkdirSync(runDir(config.dataDir), { recursive: true, mode: 0o700 });
  const marker = path.join(runDir(config.dataDir), `serve-${process.pid}`);
  fs.writeFileSync(marker, '');
  return {
    url,
    embedded: true,
    release: async () => {
      fs.rmSync(marker, { force: true });
      if (liveServers(config.dataDir).length === 0) {
        log.info('stopping the embedded PostgreSQL');
        await cluster.stop();
      }
    },
  };
}
