// Write amplification in `npm run bench`: WAL bytes per acknowledged request.
// For each server and scenario, a fixed number of requests (`--wal-events N`)
// is sent and the WAL insert position read before and after
// (pg_current_wal_insert_lsn(); pg_wal_lsn_diff). That is the whole cluster's
// WAL over the shot: with the embedded PostgreSQL only this run's databases,
// but background work (autovacuum, a checkpoint's full-page images) counts
// too, and the JSON keeps every figure.
//
// Where PostgreSQL has pg_walinspect's pg_get_wal_block_info (16 and later;
// the bench creates the extension when it may), the same WAL is split by
// relation: each record's length is charged to the relation of its first
// block (a partition or an index partition is named by its parent: `events`,
// `events_visitor`), full-page images to the block they belong to, and the
// records that touch no relation (commits and the like) are listed apart.
// Record types per relation (e.g. visitors' UPDATE against HOT_UPDATE) show
// which writes the indexes make.
import pg from 'pg';
import { type RequestFactory, type RoundsConfig, shoot } from './bench-rounds.ts';
import type { Server } from './bench-servers.ts';

export interface WalRelation {
  relation: string;
  bytes_per_request: number;
  records_per_request: number;
  fpi_bytes_per_request: number;
  /** records per request by record type (INSERT, HOT_UPDATE, INSERT_LEAF, …) */
  types: Record<string, number>;
}

export interface WalShot {
  scenario?: string;
  /** "service", "limit", or a labelled service */
  server: string;
  requests: number;
  bytes: number;
  bytes_per_request: number;
  /** full-page images within bytes_per_request (null without the breakdown) */
  fpi_bytes_per_request: number | null;
  relations: WalRelation[] | null;
  note?: string;
}

export interface WalProbe {
  /** whether the per-relation breakdown is available, and if not, why */
  breakdown: true | string;
  /** runs `send` (which returns the number of acknowledged requests) between two reads of the WAL position */
  measure(server: string, send: () => Promise<number>, settle?: () => Promise<void>): Promise<WalShot>;
  /** the WAL insert position now (for `span`) */
  lsn(): Promise<string>;
  /** the WAL between two positions `lsn` gave, per one of `n` (requests, deliveries), split as `measure`'s */
  span(server: string, from: string, to: string, n: number): Promise<WalShot>;
  close(): Promise<void>;
}

const BLOCKS_SQL = `
  WITH me AS (SELECT oid, dattablespace FROM pg_database WHERE datname = current_database()),
  b AS (
    SELECT w.start_lsn, w.block_id, w.reldatabase, w.relforknumber, w.record_type, w.record_length,
           coalesce(w.block_fpi_length, 0) AS fpi,
           w.block_id = min(w.block_id) OVER (PARTITION BY w.start_lsn) AS first,
           CASE WHEN w.reldatabase = me.oid
                THEN pg_filenode_relation(CASE WHEN w.reltablespace = me.dattablespace THEN 0 ELSE w.reltablespace END, w.relfilenode)
           END AS rel
    FROM pg_get_wal_block_info($1::pg_lsn, $2::pg_lsn, false) AS w, me
  ),
  n AS (
    SELECT b.*,
      CASE
        WHEN b.rel IS NULL THEN
          CASE WHEN b.reldatabase = 0 THEN '(shared catalogs)'
               WHEN b.reldatabase <> (SELECT oid FROM me) THEN '(other databases)'
               ELSE '(dropped or temporary relations)' END
        ELSE coalesce(
          (SELECT i.inhparent::regclass::text FROM pg_inherits i WHERE i.inhrelid = b.rel LIMIT 1),
          (SELECT t.oid::regclass::text || ' (TOAST)' FROM pg_class t WHERE t.reltoastrelid = b.rel LIMIT 1),
          b.rel::regclass::text)
      END || CASE b.relforknumber WHEN 1 THEN ' (free space map)' WHEN 2 THEN ' (visibility map)' ELSE '' END AS relation
    FROM b
  )
  SELECT relation, record_type,
         count(*) FILTER (WHERE first)::int AS records,
         coalesce(sum(record_length) FILTER (WHERE first), 0)::bigint AS bytes,
         sum(fpi)::bigint AS fpi_bytes
  FROM n GROUP BY relation, record_type`;

const per = (x: number, n: number, digits = 0) => Number((n > 0 ? x / n : 0).toFixed(digits));

export async function openWalProbe(url: string): Promise<WalProbe> {
  const db = new pg.Client({ connectionString: url, application_name: 'trackway-bench-wal' });
  db.on('error', () => {});
  await db.connect();
  let breakdown: true | string = true;
  try {
    await db.query('CREATE EXTENSION IF NOT EXISTS pg_walinspect');
    const { rows } = await db.query<{ ok: boolean }>(`SELECT to_regprocedure('pg_get_wal_block_info(pg_lsn, pg_lsn, boolean)') IS NOT NULL AS ok`);
    if (!rows[0]!.ok) breakdown = 'no pg_get_wal_block_info on this PostgreSQL (16 and later have it)';
  } catch (e) {
    breakdown = `pg_walinspect not usable here (${(e as Error).message})`;
  }
  const lsn = async () => (await db.query<{ l: string }>('SELECT pg_current_wal_insert_lsn()::text AS l')).rows[0]!.l;
  const position = async () =>
    Number((await db.query<{ b: string }>(`SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint AS b`)).rows[0]!.b);
  /** waits (up to 5 s) until less than 8 kB of WAL is written in 200 ms: the previous round's last batches are committed */
  async function quiet(): Promise<void> {
    let before = await position();
    for (let i = 0; i < 25; i++) {
      await new Promise((r) => setTimeout(r, 200));
      const now = await position();
      if (now - before < 8192) return;
      before = now;
    }
  }

  async function relations(from: string, to: string, n: number): Promise<{ relations: WalRelation[]; fpi: number } | string> {
    // pg_walinspect reads only flushed WAL: wait for the WAL writer to pass `to`
    for (let i = 0; i < 50; i++) {
      const { rows } = await db.query<{ ok: boolean }>('SELECT pg_current_wal_flush_lsn() >= $1::pg_lsn AS ok', [to]);
      if (rows[0]!.ok) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    try {
      const { rows } = await db.query<{ relation: string; record_type: string; records: number; bytes: string; fpi_bytes: string }>(BLOCKS_SQL, [
        from,
        to,
      ]);
      const byRel = new Map<string, { bytes: number; records: number; fpi: number; types: Record<string, number> }>();
      for (const r of rows) {
        const e = byRel.get(r.relation) ?? { bytes: 0, records: 0, fpi: 0, types: {} };
        e.bytes += Number(r.bytes);
        e.records += r.records;
        e.fpi += Number(r.fpi_bytes);
        if (r.records > 0) e.types[r.record_type] = (e.types[r.record_type] ?? 0) + r.records;
        byRel.set(r.relation, e);
      }
      const out: WalRelation[] = [...byRel].map(([relation, e]) => ({
        relation,
        bytes_per_request: per(e.bytes, n),
        records_per_request: per(e.records, n, 2),
        fpi_bytes_per_request: per(e.fpi, n),
        types: Object.fromEntries(Object.entries(e.types).flatMap(([t, c]) => (per(c, n, 2) > 0 ? [[t, per(c, n, 2)]] : []))),
      }));
      out.sort((a, b) => b.bytes_per_request - a.bytes_per_request);
      return {
        relations: out.filter((r) => r.bytes_per_request > 0 || r.fpi_bytes_per_request > 0),
        fpi: out.reduce((s, r) => s + r.fpi_bytes_per_request, 0),
      };
    } catch (e) {
      // e.g. a checkpoint recycled the segment the shot began in
      return `breakdown failed: ${(e as Error).message}`;
    }
  }

  async function span(server: string, from: string, to: string, n: number): Promise<WalShot> {
    const { rows } = await db.query<{ b: string }>('SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::bigint AS b', [to, from]);
    const bytes = Number(rows[0]!.b);
    const shot: WalShot = { server, requests: n, bytes, bytes_per_request: per(bytes, n), fpi_bytes_per_request: null, relations: null };
    if (breakdown !== true) return { ...shot, note: breakdown };
    const split = await relations(from, to, n);
    if (typeof split === 'string') return { ...shot, note: split };
    const attributed = split.relations.reduce((s, r) => s + r.bytes_per_request, 0);
    const rest = shot.bytes_per_request - attributed;
    if (rest > 0)
      split.relations.push({
        relation: '(no relation: commits, …)',
        bytes_per_request: rest,
        records_per_request: 0,
        fpi_bytes_per_request: 0,
        types: {},
      });
    return { ...shot, fpi_bytes_per_request: split.fpi, relations: split.relations };
  }

  return {
    breakdown,
    async measure(server, send, settle) {
      await quiet();
      const from = await lsn();
      const n = await send();
      if (settle) await settle();
      return span(server, from, await lsn(), n);
    },
    lsn,
    span,
    close: () => db.end(),
  };
}

/**
 * The WAL of `amount` requests of one scenario, sent (autocannon, as in the
 * rounds) to each server in turn; per acknowledged (2xx) request.
 */
export async function scenarioWal(
  probe: WalProbe,
  scenario: string,
  /** `probe`: one on the database the server writes to (the breakdown names only that database's relations) */
  targets: { label: string; server: Server; make: RequestFactory; probe?: WalProbe }[],
  amount: number,
  cfg: RoundsConfig,
): Promise<WalShot[]> {
  const out: WalShot[] = [];
  for (const t of targets) {
    const shot = await (t.probe ?? probe).measure(t.label, async () => {
      const s = await shoot(t.server, t.make, 0, cfg, { amount });
      return s.completed - s.non2xx;
    });
    cfg.log(`   WAL, ${scenario}, ${t.label}: ${shot.bytes_per_request} B per request over ${shot.requests}${shot.note ? ` (${shot.note})` : ''}`);
    out.push({ scenario, ...shot });
  }
  return out;
}
