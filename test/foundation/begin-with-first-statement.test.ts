// A transaction's BEGIN travels with its first statement (src/db/database.ts
// beginWithFirstStatement): one socket write, no round trip of its own, and
// still a transaction: what its statements write is seen by no one before
// COMMIT, and by no one at all after ROLLBACK or a failed statement.
import { expect } from 'chai';
import { sql } from 'kysely';
import type pg from 'pg';
import { freshDatabase, type TestDatabase } from '../support/harness.ts';
import { onStatements } from '../support/statements.ts';

describe('a transaction’s BEGIN goes with its first statement', () => {
  let tdb: TestDatabase;
  /** socket writes per pg client (counted on its stream's _write and _writev) */
  const writes = new Map<pg.Client, number>();
  /** what every client sent since the test began (pool clients bind pg's query when they connect: one hook, set before) */
  let sent: { text: string; client: pg.Client }[] = [];
  let restore: () => void;
  beforeEach(() => {
    sent = [];
  });

  before(async () => {
    // counts writes on every client's socket: hooked on the first statement each client sends
    const hooked = new WeakSet<object>();
    restore = onStatements((text, client) => {
      sent.push({ text, client });
      const stream = (client as unknown as { connection: { stream: Record<string, (...a: unknown[]) => unknown> } }).connection.stream;
      if (hooked.has(stream)) return;
      hooked.add(stream);
      for (const method of ['_write', '_writev']) {
        const original = stream[method]!.bind(stream);
        stream[method] = (...args: unknown[]) => {
          writes.set(client, (writes.get(client) ?? 0) + 1);
          return original(...args);
        };
      }
    });
    tdb = await freshDatabase();
    await sql`CREATE TABLE begin_probe (id int PRIMARY KEY, note text NOT NULL)`.execute(tdb.handle.db);
  });
  after(async () => {
    restore();
    await tdb.drop();
  });

  const rows = async () => (await sql<{ id: number }>`SELECT id FROM begin_probe ORDER BY id`.execute(tdb.handle.db)).rows.map((r) => r.id);

  it('sends BEGIN, each statement and COMMIT in order on the transaction’s connection, a later statement in one write', async () => {
    let client: pg.Client | undefined;
    await tdb.handle.db.transaction().execute(async (tx) => {
      await sql`SELECT 1`.execute(tx);
      // the transaction's connection
      client = sent.find((s) => s.text === 'begin')?.client;
      expect(client, 'BEGIN was sent with the first statement').to.not.equal(undefined);
      const before = writes.get(client!)!;
      await sql`INSERT INTO begin_probe VALUES (1, 'one')`.execute(tx);
      expect(writes.get(client!)! - before, 'a later statement: one write').to.equal(1);
    });
    const texts = sent.filter((s) => s.client === client).map((s) => s.text);
    expect(texts).to.deep.equal(['begin', 'SELECT 1', `INSERT INTO begin_probe VALUES (1, 'one')`, 'commit']);
    expect(await rows()).to.deep.equal([1]);
  });

  it('writes BEGIN and the first statement together: one write where there were two', async () => {
    // every connection of the pool has written before (the test above and the table's creation): count from here
    const written = new Map(writes);
    await tdb.handle.db.transaction().execute(async (tx) => {
      await sql`SELECT 2`.execute(tx);
      const client = sent.find((s) => s.text === 'begin')?.client;
      expect(client).to.not.equal(undefined);
      expect(sent.filter((s) => s.client === client).map((s) => s.text)).to.deep.equal(['begin', 'SELECT 2']);
      expect(writes.get(client!)! - (written.get(client!) ?? 0), 'BEGIN and SELECT 2: one write').to.equal(1);
    });
  });

  it('keeps what the transaction writes from everyone else until COMMIT', async () => {
    let seenInside: number[] = [];
    await tdb.handle.db.transaction().execute(async (tx) => {
      await sql`INSERT INTO begin_probe VALUES (2, 'two')`.execute(tx);
      // another connection of the pool: had the first statement gone without its BEGIN, it would be committed already
      seenInside = await rows();
    });
    expect(seenInside).to.not.include(2);
    expect(await rows()).to.include(2);
  });

  it('leaves nothing behind when the transaction throws, nor when a later statement fails', async () => {
    const thrown = await tdb.handle.db
      .transaction()
      .execute(async (tx) => {
        await sql`INSERT INTO begin_probe VALUES (3, 'three')`.execute(tx);
        throw new Error('the caller gives up');
      })
      .catch((e: Error) => e.message);
    expect(thrown).to.equal('the caller gives up');
    const failed = await tdb.handle.db
      .transaction()
      .execute(async (tx) => {
        await sql`INSERT INTO begin_probe VALUES (4, 'four')`.execute(tx);
        await sql`INSERT INTO begin_probe VALUES (4, 'again')`.execute(tx);
      })
      .catch((e: { code?: string }) => e.code);
    expect(failed, 'unique violation').to.equal('23505');
    expect(await rows()).to.not.include.members([3]);
    expect(await rows()).to.not.include(4);
  });

  it('fails the first statement when it fails, and the connection serves the next transaction', async () => {
    const code = await tdb.handle.db
      .transaction()
      .execute(async (tx) => {
        await sql`SELECT * FROM begin_probe_missing`.execute(tx);
      })
      .catch((e: { code?: string }) => e.code);
    expect(code, 'undefined table').to.equal('42P01');
    // every connection of the pool, one after another, runs a transaction as usual
    for (let i = 0; i < 12; i++) {
      await tdb.handle.db.transaction().execute(async (tx) => {
        await sql`INSERT INTO begin_probe VALUES (${100 + i}, 'n') `.execute(tx);
      });
    }
    expect((await rows()).filter((id) => id >= 100)).to.have.length(12);
  });

  it('sends nothing for a transaction that sends nothing', async () => {
    await tdb.handle.db.transaction().execute(async () => undefined);
    const thrown = await tdb.handle.db
      .transaction()
      .execute(async () => {
        throw new Error('nothing sent');
      })
      .catch((e: Error) => e.message);
    expect(thrown).to.equal('nothing sent');
    expect(sent).to.deep.equal([]);
  });
});
