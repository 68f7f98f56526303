// settings: process-wide values kept in the database (the sealed JWT key).
// Kysely only.
import type { Database } from '../db/database.ts';

export async function getSetting(db: Database, key: string): Promise<string | undefined> {
  const row = await db.selectFrom('settings').select('value').where('key', '=', key).executeTakeFirst();
  return row?.value;
}

/** Inserts `key` unless it exists (a concurrent start may have made it first). */
export async function insertSettingIfAbsent(db: Database, key: string, value: string): Promise<void> {
  await db
    .insertInto('settings')
    .values({ key, value })
    .onConflict((oc) => oc.column('key').doNothing())
    .execute();
}

export async function deleteSetting(db: Database, key: string): Promise<boolean> {
  const r = await db.deleteFrom('settings').where('key', '=', key).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}
