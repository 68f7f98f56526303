// Executors and tenant scoping: what every repository starts from.
//
// A repository's first argument is an Executor (the database or a transaction
// the service opened); a statement on a tenant's rows starts from
// orgScoped(db, orgId), so the org_id condition is written in one place.
import { type Expression, type Kysely, type SqlBool, sql, type Transaction } from 'kysely';
import type { DB } from './schema.ts';

/** The database or an open transaction: what a repository function runs on. */
export type Executor = Kysely<DB> | Transaction<DB>;
/** An open transaction: for a repository function that must run inside one (locks, several statements). */
export type Tx = Transaction<DB>;

/** The tables whose rows belong to one organisation (they carry org_id). */
export type OrgTable = { [T in keyof DB]: DB[T] extends { org_id: unknown } ? T : never }[keyof DB];
/** An organisation's table, or the same table under an alias (`'visitors as v'`). */
export type OrgTableRef = OrgTable | `${OrgTable} as ${string}`;

/** The name the org_id column is referred to by: the alias when there is one. */
function orgColumn(table: OrgTableRef): string {
  const alias = / as (\S+)$/.exec(table);
  return `${alias ? alias[1] : table}.org_id`;
}

/**
 * Adds `<table>.org_id = orgId` to a builder. The condition is raw SQL on the
 * column's name, so it type-checks for whichever table the builder is on (the
 * builder's own `where` overloads do not resolve for a generic table).
 */
function scoped<Q>(q: Q, table: OrgTableRef, orgId: number): Q {
  const where = sql<SqlBool>`${sql.ref(orgColumn(table))} = ${orgId}`;
  return (q as unknown as { where(e: Expression<SqlBool>): Q }).where(where);
}

/**
 * Statements on one organisation's rows. Each builder comes back with the
 * org_id condition already in its WHERE; callers add theirs.
 */
export function orgScoped(db: Executor, orgId: number) {
  return {
    selectFrom<T extends OrgTableRef>(table: T) {
      return scoped((db as Kysely<DB>).selectFrom(table), table, orgId);
    },
    updateTable<T extends OrgTable>(table: T) {
      return scoped((db as Kysely<DB>).updateTable(table), table, orgId);
    },
    deleteFrom<T extends OrgTable>(table: T) {
      return scoped((db as Kysely<DB>).deleteFrom(table), table, orgId);
    },
  };
}

/** The organisations a platform account (user) belongs to: a subquery for `org_id in (…)`. */
export function memberOrganisations(db: Executor, accountId: number) {
  return db.selectFrom('organisation_members').select('organisation_members.org_id').where('organisation_members.user_id', '=', accountId);
}
