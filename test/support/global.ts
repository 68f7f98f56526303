// Once per test run: a PostgreSQL (an embedded cluster in a temp dir, or the
// server DATABASE_URL names) and one migrated template database that every
// test file clones (CREATE DATABASE ... TEMPLATE, ~10 ms).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createDb, migrate } from '../../src/db/database.ts';
import { distribute } from '../../src/db/distribution.ts';
import { type EmbeddedCluster, startEmbedded } from '../../src/db/embedded.ts';
import { citusFromEnv, createCitusTemplate, dropOnWorkers } from './citus.ts';

let cluster: EmbeddedCluster | undefined;
let tmpDir: string | undefined;

export interface TestDatabaseServer {
  adminUrl: string;
  template: string;
  urlFor(db: string): string;
  prefix: string;
}

function withDatabase(url: string, db: string): string {
  const u = new URL(url);
  u.pathname = `/${db}`;
  return u.toString();
}

export async function mochaGlobalSetup(): Promise<void> {
  const prefix = `tw_${process.pid}_${Date.now().toString(36)}`;
  let adminUrl: string;
  if (process.env.DATABASE_URL) {
    adminUrl = process.env.DATABASE_URL;
  } else {
    tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'trackway-test-'));
    // a random free port, unless TRACKWAY_PG_PORT pins it
    const pinned = process.env.TRACKWAY_PG_PORT ? Number(process.env.TRACKWAY_PG_PORT) : undefined;
    cluster = await startEmbedded({ dataDir: tmpDir, ephemeral: true, port: pinned });
    adminUrl = cluster.url('postgres');
  }
  const template = `${prefix}_template`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${template}`);
  await admin.end();
  const citus = citusFromEnv(adminUrl);
  if (citus) await createCitusTemplate(citus, adminUrl, template);
  const h = createDb(withDatabase(adminUrl, template), { max: 2 });
  await migrate(h.db);
  if (citus) await distribute(h.db);
  await h.close();
  process.env.TRACKWAY_TEST_DB = JSON.stringify({ adminUrl, template, prefix });
}

export async function mochaGlobalTeardown(): Promise<void> {
  const info = JSON.parse(process.env.TRACKWAY_TEST_DB ?? '{}') as { adminUrl?: string; prefix?: string };
  if (process.env.DATABASE_URL && info.adminUrl && info.prefix) {
    // leave the shared server as we found it
    const admin = new pg.Client({ connectionString: info.adminUrl });
    await admin.connect();
    const { rows } = await admin.query<{ datname: string }>('SELECT datname FROM pg_database WHERE datname LIKE $1', [`${info.prefix}%`]);
    for (const { datname } of rows) {
      await admin.query(`DROP DATABASE IF EXISTS ${admin.escapeIdentifier(datname)} WITH (FORCE)`).catch(() => {});
    }
    await admin.end();
    const citus = citusFromEnv(info.adminUrl);
    if (citus)
      await dropOnWorkers(
        citus,
        rows.map((r) => r.datname),
      );
  }
  if (cluster) await cluster.stop();
  if (tmpDir) fs.rmSync(tmpDir, { recursive: true, force: true });
}

export function testDatabaseServer(): TestDatabaseServer {
  const raw = process.env.TRACKWAY_TEST_DB;
  if (!raw) throw new Error('the global test setup did not run');
  const info = JSON.parse(raw) as { adminUrl: string; template: string; prefix: string };
  return { ...info, urlFor: (db) => withDatabase(info.adminUrl, db) };
}
