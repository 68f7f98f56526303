// Shared set-up of the privacy tests: shoppers tracked through the real
// tracking API, privacy requests through the platform API, and a scan of
// every table and column of the database for given strings.
import { expect } from 'chai';
import { sql } from 'kysely';
import type { Database } from '../../src/db/database.ts';
import { type Account, unique } from '../support/accounts.ts';
import type { TestServer } from '../support/harness.ts';
import { eventually } from '../support/wait.ts';
import { b64url } from '../support/payload.ts';
import type { OrgId } from '../../src/db/tenancy.ts';
import type { BodyOf } from '../support/client.ts';

export interface Visitor {
  roaming: string;
  core: string;
}

export function newVisitor(): Visitor {
  return { roaming: unique('r'), core: unique('c') };
}

/** The tracking API of one organisation, as a shop's tracker calls it. */
export function tracker(srv: TestServer, orgId: OrgId) {
  return {
    async identify(v: Visitor, payload: Record<string, string>, headers: Record<string, string> = {}) {
      const r = await srv.api.get(`/jsv1/identify/${orgId}/${v.roaming}/${v.core}/${b64url(payload)}`, { headers });
      expect(r.status, r.text).to.equal(200);
    },
    async event(v: Visitor, name: string, body: Record<string, unknown>, corex: string | null = null, headers: Record<string, string> = {}) {
      const r = await srv.api.post(`/jsv1/${orgId}/${v.roaming}/${v.core}/${corex ?? 'null'}/event/${name}`, body, { headers });
      expect(r.status, r.text).to.equal(202);
    },
  };
}

/** Privacy requests of one organisation through the platform API. */
export function privacyApi(srv: TestServer, account: Pick<Account, 'platform' | 'token'>, orgId: number) {
  const base = `/v1/rest/${account.platform}/organisations/${orgId}`;
  return {
    base,
    // each typed by its success body unless the caller names another (an error body)
    create: <T = BodyOf<'createPrivacyRequest'>>(body: unknown) => srv.api.post<T>(`${base}/privacy-requests`, body, { token: account.token }),
    get: <T = BodyOf<'getPrivacyRequest'>>(id: number | string) => srv.api.get<T>(`${base}/privacy-requests/${id}`, { token: account.token }),
    list: <T = BodyOf<'listPrivacyRequests'>>(query = '') => srv.api.get<T>(`${base}/privacy-requests${query}`, { token: account.token }),
    suppressions: <T = BodyOf<'listPrivacySuppressions'>>(query = '') =>
      srv.api.get<T>(`${base}/privacy-suppressions${query}`, { token: account.token }),
    /** Makes a request and waits until the runner finished it; the finished request. */
    async run(body: unknown, timeoutMs = 30_000) {
      const r = await srv.api.post<BodyOf<'createPrivacyRequest'>>(`${base}/privacy-requests`, body, { token: account.token });
      expect(r.status, r.text).to.equal(202);
      return eventually(
        async () => {
          const g = await srv.api.get<BodyOf<'getPrivacyRequest'>>(`${base}/privacy-requests/${r.body.id}`, { token: account.token });
          expect(g.status, g.text).to.equal(200);
          return g.body.status === 'done' || g.body.status === 'failed' ? g.body : undefined;
        },
        timeoutMs,
        `privacy request ${r.body.id} to finish`,
      );
    },
  };
}

export interface Hit {
  table: string;
  column: string;
  needle: string;
  rows: number;
}

/**
 * Every place in the database (every table, partitions included, every
 * column of a text, character, json, jsonb, array or bytea type, bytea read
 * as escaped text) where one of `needles` occurs, case-insensitively.
 */
export async function scanDatabase(db: Database, needles: readonly string[]): Promise<Hit[]> {
  return (await scanDatabaseWithFigures(db, needles)).hits;
}

/** scanDatabase, and how many tables and columns it looked in. */
export async function scanDatabaseWithFigures(db: Database, needles: readonly string[]): Promise<{ hits: Hit[]; tables: number; columns: number }> {
  const { rows: columns } = await sql<{ table: string; column: string; type: string }>`
    SELECT c.table_name AS table, c.column_name AS column, c.data_type AS type
    FROM information_schema.columns c
    JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
    WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'
      AND c.data_type IN ('text', 'character varying', 'character', 'json', 'jsonb', 'ARRAY', 'bytea', 'USER-DEFINED')
    ORDER BY 1, 2
  `.execute(db);
  expect(columns.length, 'the scan found no columns to look in').to.be.greaterThan(20);
  const hits: Hit[] = [];
  for (const { table, column, type } of columns) {
    const asText = type === 'bytea' ? sql`encode(${sql.ref(column)}, 'escape')` : sql`${sql.ref(column)}::text`;
    for (const needle of needles) {
      const { rows } = await sql<{ n: number }>`
        SELECT count(*)::int AS n FROM ${sql.table(table)} WHERE ${asText} ILIKE ${'%' + needle.replace(/[\\%_]/g, (c) => `\\${c}`) + '%'}
      `.execute(db);
      if (rows[0]!.n > 0) hits.push({ table, column, needle, rows: rows[0]!.n });
    }
  }
  return { hits, tables: new Set(columns.map((c) => c.table)).size, columns: columns.length };
}

/** The tables of the hits. */
export const tablesOf = (hits: Hit[]) => [...new Set(hits.map((h) => h.table.replace(/^events_\d{4}_\d{2}$/, 'events')))].sort();
