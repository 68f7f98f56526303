// A scratch database on the test server with the schema as older code left
// it: every migration up to and including `migration`, none after. Tests of
// a migration write there what the old code wrote, then migrate to the
// latest (src/db/database.ts migrate) and check what became of it.
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { FileMigrationProvider, Migrator } from 'kysely';
import pg from 'pg';
import { createDb, type DbHandle } from '../../src/db/database.ts';
import { testDatabaseServer } from './global.ts';

export interface OldSchemaDatabase {
  name: string;
  handle: DbHandle;
  /** closes the handle and drops the database */
  drop(): Promise<void>;
}

async function admin(sqlText: string): Promise<void> {
  const client = new pg.Client({ connectionString: testDatabaseServer().adminUrl });
  await client.connect();
  try {
    await client.query(sqlText);
  } finally {
    await client.end();
  }
}

/** A new database named `<prefix>_<suffix>`, migrated up to `migration` (a file name without .ts). */
export async function databaseAtMigration(suffix: string, migration: string, max = 5): Promise<OldSchemaDatabase> {
  const server = testDatabaseServer();
  const name = `${server.prefix}_${suffix}`;
  await admin(`CREATE DATABASE ${name}`);
  const handle = createDb(server.urlFor(name), { max, onError: () => {} });
  const migrator = new Migrator({
    db: handle.db,
    provider: new FileMigrationProvider({ fs: fsp, path, migrationFolder: fileURLToPath(new URL('../../src/db/migrations', import.meta.url)) }),
  });
  const { error } = await migrator.migrateTo(migration);
  // eslint-disable-next-line @typescript-eslint/only-throw-error -- the migrator's error, as it reported it
  if (error) throw error;
  return {
    name,
    handle,
    async drop() {
      await handle.close();
      await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
    },
  };
}
