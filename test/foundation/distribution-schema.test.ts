// The schema stays distributable by organisation (Citus, docs/scaling.md
// "Stage 2") without Citus: read from the migrated catalog of a plain
// PostgreSQL. Every table is classified in src/db/distribution.ts; a tenant
// table has no identity column, every unique key includes its organisation
// column, and its foreign keys go to reference tables or to a colocated
// tenant table by the organisation column; a reference table references only
// reference tables.
import { expect } from 'chai';
import { sql } from 'kysely';
import { LOCAL_TABLES, REFERENCE_TABLES, TENANT_TABLES } from '../../src/db/distribution.ts';
import { freshDatabase, type TestDatabase } from '../support/harness.ts';

const tenantColumn = new Map(TENANT_TABLES.map((t) => [t.table, t.column]));
const reference = new Set(REFERENCE_TABLES);

describe('schema ready for distribution by organisation (no Citus needed)', function () {
  let database: TestDatabase;

  before(async () => {
    database = await freshDatabase();
  });
  after(async () => {
    await database.drop();
  });

  it('classifies every table as tenant, reference or local', async () => {
    const { rows } = await sql<{ name: string }>`
      SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition
      ORDER BY 1
    `.execute(database.handle.db);
    const unclassified = rows.map((r) => r.name).filter((t) => !tenantColumn.has(t) && !reference.has(t) && !LOCAL_TABLES.includes(t));
    expect(unclassified, 'add each to TENANT_TABLES or REFERENCE_TABLES in src/db/distribution.ts').to.deep.equal([]);
  });

  it('has no identity column in a tenant table', async () => {
    const { rows } = await sql<{ t: string; col: string }>`
      SELECT table_name AS t, column_name AS col FROM information_schema.columns
      WHERE table_schema = 'public' AND is_identity = 'YES'
    `.execute(database.handle.db);
    expect(rows.filter((r) => tenantColumn.has(r.t))).to.deep.equal([]);
  });

  it('includes the organisation column in every unique key and primary key of a tenant table', async () => {
    const { rows } = await sql<{ t: string; idx: string; cols: string[] }>`
      SELECT c.relname AS t, i.relname AS idx,
             ARRAY(SELECT a.attname::text FROM unnest(x.indkey) k JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k) AS cols
      FROM pg_index x
      JOIN pg_class c ON c.oid = x.indrelid
      JOIN pg_class i ON i.oid = x.indexrelid
      JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'public' AND x.indisunique AND NOT c.relispartition
    `.execute(database.handle.db);
    const bad = rows
      .filter((r) => tenantColumn.has(r.t) && !r.cols.includes(tenantColumn.get(r.t)!))
      .map((r) => `${r.t}.${r.idx} (${r.cols.join(', ')})`);
    expect(bad).to.deep.equal([]);
  });

  it('has only foreign keys Citus accepts: to a reference table, or tenant to tenant by the organisation column', async () => {
    const { rows } = await sql<{ t: string; ref: string; name: string; cols: string[]; refcols: string[] }>`
      SELECT c.relname AS t, r.relname AS ref, k.conname AS name,
             ARRAY(SELECT a.attname::text FROM unnest(k.conkey) WITH ORDINALITY u(n, o) JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.n ORDER BY u.o) AS cols,
             ARRAY(SELECT a.attname::text FROM unnest(k.confkey) WITH ORDINALITY u(n, o) JOIN pg_attribute a ON a.attrelid = k.confrelid AND a.attnum = u.n ORDER BY u.o) AS refcols
      FROM pg_constraint k
      JOIN pg_class c ON c.oid = k.conrelid
      JOIN pg_class r ON r.oid = k.confrelid
      JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE k.contype = 'f' AND n.nspname = 'public' AND NOT c.relispartition
    `.execute(database.handle.db);
    expect(rows.length).to.be.greaterThan(0);
    const bad = rows
      .filter((r) => {
        if (reference.has(r.t)) return !reference.has(r.ref);
        if (!tenantColumn.has(r.t)) return true;
        if (reference.has(r.ref)) return false;
        if (!tenantColumn.has(r.ref)) return true;
        const at = r.cols.indexOf(tenantColumn.get(r.t)!);
        return at < 0 || r.refcols[at] !== tenantColumn.get(r.ref);
      })
      .map((r) => `${r.t}.${r.name} -> ${r.ref}`);
    expect(bad).to.deep.equal([]);
  });
});
