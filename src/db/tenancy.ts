// Executors and tenant scoping: what every repository starts from.
//
// A repository's first argument is an Executor (the database or a transaction
// the service opened); a statement on a tenant's rows starts from
// orgScoped(db, orgId), so the org_id condition is written in one place.
import { type Expression, type Kysely, type SqlBool, sql, type Transaction } from 'kysely';
import type { DB } from './schema.ts';

/**
 * An organisation's id: a number at run time, branded so that the compiler
 * refuses an integration id, a user id or any other number where an
 * organisation is meant (and the other way round).
 *
 * A number becomes an OrgId where it first means an organisation, and only
 * there: a row read from the database (the org_id columns and
 * organisations.id are typed OrgId in schema.ts), a path parameter after the
 * contract validated it (`PathOf`/`QueryOf` in src/http/types.ts brand
 * `org_id`), a validated request body or command-line flag (`asOrgId()`), a
 * NOTIFY payload (`parseOrgId()`). Everything past those boundaries passes
 * OrgIds along and never casts (docs/architecture.md "Organisation ids").
 */
export type OrgId = number & { readonly __brand: 'OrgId' };

/** A number that names an organisation, checked (a positive safe integer), as an OrgId. */
export function asOrgId(value: number): OrgId {
  if (!Number.isSafeInteger(value) || value <= 0) throw new TypeError(`not an organisation id: ${value}`);
  return value as OrgId;
}

/** An organisation's id written as text (a NOTIFY payload), or undefined when it names none. */
export function parseOrgId(text: string): OrgId | undefined {
  const n = Number(text);
  return Number.isSafeInteger(n) && n > 0 ? (n as OrgId) : undefined;
}

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
function scoped<Q>(q: Q, table: OrgTableRef, orgId: OrgId): Q {
  const where = sql<SqlBool>`${sql.ref(orgColumn(table))} = ${orgId}`;
  return (q as unknown as { where(e: Expression<SqlBool>): Q }).where(where);
}

/**
 * Statements on one organisation's rows. Each builder comes back with the
 * org_id condition already in its WHERE; callers add theirs.
 */
export function orgScoped(db: Executor, orgId: OrgId) {
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
