// How Trackway's tables are distributed on Citus (docs/scaling.md "Stage 2"),
// and `trackway migrate --distribute`. Every table of the schema is listed
// here: a tenant table is distributed by its organisation column, colocated
// with organisations; a reference table is copied to every node. The schema
// check (test/foundation/distribution-schema.test.ts) fails on a table listed
// nowhere, so a new table has to choose.
import { sql } from 'kysely';
import type { Database } from './database.ts';
import type { Executor } from './tenancy.ts';

/** Tenant tables and their distribution column, in the order they are distributed (organisations first). */
export const TENANT_TABLES: readonly { table: string; column: string }[] = [
  { table: 'organisations', column: 'id' },
  { table: 'integrations', column: 'org_id' },
  { table: 'persons', column: 'org_id' },
  { table: 'visitors', column: 'org_id' },
  { table: 'contacts', column: 'org_id' },
  { table: 'visitor_contacts', column: 'org_id' },
  { table: 'products', column: 'org_id' },
  { table: 'events', column: 'org_id' },
  { table: 'learn_events', column: 'org_id' },
  { table: 'deliveries', column: 'org_id' },
  { table: 'delivery_attempts', column: 'org_id' },
  { table: 'webhook_backlog_limits', column: 'org_id' },
  { table: 'webhook_endpoint_health', column: 'org_id' },
  { table: 'privacy_requests', column: 'org_id' },
  { table: 'privacy_suppressions', column: 'org_id' },
  { table: 'bot_requests', column: 'org_id' },
];

/** Small tables read by key, copied to every node; in an order that respects their foreign keys. */
export const REFERENCE_TABLES: readonly string[] = [
  'settings',
  'users',
  'login_failures',
  'organisation_members',
  'organisation_domains',
  'organisation_tokens',
  'integration_owners',
];

/** Kysely's own bookkeeping: stays local on the coordinator. */
export const LOCAL_TABLES: readonly string[] = ['kysely_migration', 'kysely_migration_lock'];

export class CitusAbsent extends Error {
  constructor() {
    super('the citus extension is not installed in this database (CREATE EXTENSION citus on every node first)');
  }
}

/** Whether this database has the citus extension. */
export async function hasCitus(db: Executor): Promise<boolean> {
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_extension WHERE extname = 'citus'`.execute(db);
  return rows[0]!.n > 0;
}

/** Whether `table` is a distributed (or reference) table of a Citus cluster here; false on plain PostgreSQL. */
export async function isDistributed(db: Executor, table: string): Promise<boolean> {
  if (!(await hasCitus(db))) return false;
  const { rows: found } = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM pg_dist_partition WHERE logicalrelid = to_regclass(${table})
  `.execute(db);
  return found[0]!.n > 0;
}

/**
 * Makes the reference tables and distributes the tenant tables by their
 * organisation column, colocated with organisations. Tables already done are
 * left alone, so it can run again (after a migration added a table). Returns
 * what it did, one line a table.
 */
export async function distribute(db: Database): Promise<string[]> {
  if (!(await hasCitus(db))) throw new CitusAbsent();
  const { rows } = await sql<{ name: string; kind: string }>`
    SELECT logicalrelid::regclass::text AS name, partmethod AS kind FROM pg_dist_partition
  `.execute(db);
  const done = new Map(rows.map((r) => [r.name, r.kind]));
  const out: string[] = [];
  const pending = [...REFERENCE_TABLES, ...TENANT_TABLES.map((t) => t.table)].filter((t) => !done.has(t));
  if (pending.length === 0) return out;
  // Citus makes a table distributed or reference only when no local table
  // references it or is referenced by it: the foreign keys between our tables
  // are taken off first and put back once every table is distributed (the
  // same transaction would mix DDL on shards with it: separate steps instead)
  const { rows: fks } = await sql<{ t: string; name: string; def: string }>`
    SELECT c.relname AS t, k.conname AS name, pg_get_constraintdef(k.oid) AS def
    FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE k.contype = 'f' AND n.nspname = 'public' AND NOT c.relispartition AND k.conparentid = 0
    ORDER BY 1, 2
  `.execute(db);
  for (const fk of fks) {
    await sql`ALTER TABLE ${sql.table(fk.t)} DROP CONSTRAINT ${sql.ref(fk.name)}`.execute(db);
  }
  for (const table of REFERENCE_TABLES) {
    if (done.has(table)) continue;
    await sql`SELECT create_reference_table(${table})`.execute(db);
    out.push(`${table}: reference table`);
  }
  for (const { table, column } of TENANT_TABLES) {
    if (done.has(table)) continue;
    const colocate = table === 'organisations' ? 'default' : 'organisations';
    await sql`SELECT create_distributed_table(${table}, ${column}, colocate_with => ${colocate})`.execute(db);
    out.push(`${table}: distributed by ${column}`);
  }
  for (const fk of fks) {
    await sql`ALTER TABLE ${sql.table(fk.t)} ADD CONSTRAINT ${sql.ref(fk.name)} ${sql.raw(fk.def)}`.execute(db);
  }
  return out;
}
