// The plain batch of events identity records (productview, updatecart,
// checkout, buy): one statement writes the visitors, the events, the
// persons' recent views and cart and the product catalogue
// (src/tracking/plain-batch.service.ts, src/identity/profile-upsert.repository.ts).
// It must write exactly what the transaction path (processBatch, Stitching)
// writes for the same items, and the person it writes to must be the
// visitor's person under its row lock, also when another batch merged it
// after the statement's snapshot.
import { expect } from 'chai';
import { sql } from 'kysely';
import { prepareBatch, processBatch, storeBatch } from '../../src/tracking/batch.service.ts';
import type { EventItem } from '../../src/tracking/ingest.types.ts';
import { isPlainBatch, storePlainBatch } from '../../src/tracking/plain-batch.service.ts';
import { FreshVisitors } from '../../src/identity/fresh-visitors.service.ts';
import { profileMarks } from '../../src/identity/recorded.rules.ts';
import { visitorTouches } from '../../src/identity/stitching.service.ts';
import { type Account, newAccount, newMerchant, unique } from '../support/accounts.ts';
import { onCitusCluster } from '../support/citus.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import type { OrgId } from '../support/org-id.ts';
import { onStatements, untilWaitingOnLock } from '../support/statements.ts';

const policy = {
  identityVerification: 'optional' as const,
  exportUnverified: true,
  allowsUrl: (url: string) => url.startsWith('https://shop.example/'),
  suppressing: false,
};

function event(orgId: OrgId, coreId: string, name: EventItem['name'], body: Record<string, unknown>, over: Partial<EventItem> = {}): EventItem {
  return {
    kind: 'event',
    orgId,
    roamingId: `r-${coreId}`,
    coreId,
    receivedAt: new Date(),
    userAgent: 'UA/1',
    location: null,
    policy,
    corexId: null,
    name,
    body,
    ...over,
  };
}

const view = (n: number, host = 'shop.example') => ({ product_id: n, price: 1, product_url: `https://${host}/p/${n}` });
const cart = (n: number, host = 'shop.example') => ({ product_id: n, cart_url: `https://${host}/cart` });

describe('tracking: a plain batch records views and carts in its one statement, as the transaction does', () => {
  let srv: TestServer;
  let account: Account;
  let sent: string[] | null = null;
  let restore = () => {};
  before(async () => {
    restore = onStatements((text) => sent?.push(text));
    srv = await startTestServer();
    account = await newAccount(srv);
  });
  after(async () => {
    restore();
    await srv.stop();
  });

  /** The statements sent while `fn` runs. */
  async function statements(fn: () => Promise<unknown>): Promise<string[]> {
    sent = [];
    try {
      await fn();
      return sent;
    } finally {
      sent = null;
    }
  }

  const viaTransaction = (items: EventItem[]) =>
    srv.deps.db.transaction().execute(async (tx) => processBatch(tx, await prepareBatch(srv.deps, tx, items)));

  /** Every row the batch path writes in an organisation, keyed by core_id and product_id (ids and xmin left out). */
  async function rowsOf(org: OrgId) {
    const db = srv.deps.db;
    const visitors = (
      await sql<{ core_id: string; person_id: string; roaming_id: string; first_seen: Date; last_seen: Date; user_agent: string | null }>`
        SELECT core_id, person_id::text, roaming_id, first_seen, last_seen, user_agent FROM visitors WHERE org_id = ${org} ORDER BY core_id`.execute(
        db,
      )
    ).rows;
    const persons = (
      await sql<{ id: string; last_view: unknown; last_cart_product_id: string | null; last_cart_url: string | null; last_cart_at: Date | null }>`
        SELECT id::text, last_view, last_cart_product_id::text, last_cart_url, last_cart_at FROM persons WHERE org_id = ${org}`.execute(db)
    ).rows;
    const products = (await sql`SELECT product_id, url, seen_at FROM products WHERE org_id = ${org} ORDER BY product_id`.execute(db)).rows;
    const events = (
      await sql`SELECT core_id, name, roaming_id, corex_id, received_at, body FROM events WHERE org_id = ${org} ORDER BY core_id, id`.execute(db)
    ).rows;
    // persons named by their visitors: the same shape whatever the ids drawn
    const profileOf = new Map(persons.map(({ id, ...p }) => [id, p]));
    const groups = new Map<string, string[]>();
    for (const v of visitors) groups.set(v.person_id, [...(groups.get(v.person_id) ?? []), v.core_id]);
    return {
      visitors: visitors.map(({ person_id, ...v }) => ({ ...v, person: groups.get(person_id), profile: profileOf.get(person_id) ?? null })),
      persons: persons.length,
      products,
      events,
    };
  }

  it('writes the same visitors, events, profiles and catalogue rows as the transaction path', async () => {
    const [plain, txn] = [(await newMerchant(srv, account)).organisation.id, (await newMerchant(srv, account)).organisation.id];
    const base = Date.now() - 60_000;
    const t = (s: number) => new Date(base + s * 1000);
    // before: c returns (fresh), d1 and d2 share a person (stitched by a corex_id), d1 has a profile already
    const before = (org: OrgId): EventItem[] => [
      event(org, 'c', 'view', { page: 'https://shop.example/' }, { receivedAt: t(0) }),
      event(org, 'd1', 'productview', view(9), { receivedAt: t(1), corexId: 'cx' }),
      event(org, 'd2', 'view', { page: 'https://shop.example/' }, { receivedAt: t(2), corexId: 'cx' }),
      event(org, 'g', 'updatecart', cart(8), { receivedAt: t(3) }),
    ];
    // the batch: views in an order that tests the 3 most recent distinct, carts (one foreign), a foreign product,
    // checkout and buy items, GPC, a page view, two visitors of one person
    const batch = (org: OrgId): EventItem[] => [
      event(org, 'a', 'productview', view(1), { receivedAt: t(10) }),
      event(org, 'a', 'productview', view(2), { receivedAt: t(11) }),
      event(org, 'a', 'updatecart', cart(1), { receivedAt: t(12) }),
      event(org, 'a', 'productview', view(1), { receivedAt: t(13) }),
      event(org, 'a', 'productview', view(3), { receivedAt: t(14) }),
      event(org, 'a', 'productview', view(4), { receivedAt: t(15) }),
      event(org, 'a', 'updatecart', cart(4, 'evil.example'), { receivedAt: t(16) }),
      event(org, 'b', 'productview', view(5, 'evil.example'), { receivedAt: t(17) }),
      event(org, 'c', 'updatecart', cart(2), { receivedAt: t(18) }),
      event(org, 'd1', 'productview', view(6), { receivedAt: t(19) }),
      event(org, 'd2', 'productview', view(7), { receivedAt: t(20) }),
      event(org, 'd1', 'updatecart', cart(6), { receivedAt: t(21) }),
      event(org, 'd2', 'productview', view(6), { receivedAt: t(22) }),
      event(
        org,
        'e',
        'checkout',
        {
          items: [
            { product_id: 1, product_url: 'https://shop.example/p/1b' },
            { product_id: 10, product_url: 'https://evil.example/x' },
          ],
        },
        { receivedAt: t(23) },
      ),
      event(org, 'e', 'buy', { order_id: 'o1', items: [{ product_id: 11, product_url: 'https://shop.example/p/11' }] }, { receivedAt: t(24) }),
      event(org, 'f', 'productview', view(12), { receivedAt: t(25), gpc: true }),
      event(org, 'f', 'updatecart', cart(12), { receivedAt: t(26), gpc: true }),
      event(org, 'h', 'view', { page: 'https://shop.example/' }, { receivedAt: t(27) }),
    ];
    for (const org of [plain, txn]) await viaTransaction(before(org));
    expect(isPlainBatch(batch(plain), () => false)).to.equal(true);
    await storePlainBatch(srv.deps.db, batch(plain));
    await viaTransaction(batch(txn));
    const [p, x] = [await rowsOf(plain), await rowsOf(txn)];
    expect(p).to.deep.equal(x);
    // and what that is (so that both paths cannot agree on nothing)
    const profile = (core: string) => p.visitors.find((v) => v.core_id === core)!.profile;
    expect(profile('a')!.last_view).to.deep.equal(
      [4, 3, 1].map((n) => ({ url: `https://shop.example/p/${n}`, at: t(n === 1 ? 13 : n + 11).toISOString() })),
    );
    expect(profile('a')).to.include({ last_cart_product_id: '4', last_cart_url: null });
    expect(profile('b'), 'a foreign product view records nothing').to.equal(null);
    expect(profile('c')).to.include({ last_cart_product_id: '2', last_cart_url: 'https://shop.example/cart' });
    expect(profile('d1')).to.equal(profile('d2'));
    expect(profile('d1')!.last_view).to.deep.equal(
      [6, 7, 9].map((n) => ({ url: `https://shop.example/p/${n}`, at: t(n === 6 ? 22 : n === 7 ? 20 : 1).toISOString() })),
    );
    expect(profile('d1')).to.include({ last_cart_product_id: '6' });
    expect(profile('f'), 'GPC').to.equal(null);
    expect(profile('g')).to.include({ last_cart_product_id: '8' });
    expect(p.products.map((r) => (r as { product_id: number }).product_id)).to.deep.equal([1, 2, 3, 4, 6, 7, 9, 11]);
    expect(p.events).to.have.length(22);
  });

  /**
   * One cart for `moved`, sent while another transaction merges moved's person into kept's (the
   * visitor row locked until it commits; the statement's snapshot still says the merged person).
   * With `fresh` the process knows moved fresh: held by a share lock, not sent (sent under Citus).
   */
  async function cartDuringMerge(fresh?: FreshVisitors) {
    const org = (await newMerchant(srv, account)).organisation.id;
    const [moved, kept] = [unique('c'), unique('c')];
    await storePlainBatch(srv.deps.db, [event(org, moved, 'updatecart', cart(1)), event(org, kept, 'updatecart', cart(2))], fresh);
    const personOf = async (core: string) =>
      (await sql<{ p: string }>`SELECT person_id::text AS p FROM visitors WHERE org_id = ${org} AND core_id = ${core}`.execute(srv.deps.db)).rows[0]!
        .p;
    const [gone, keep] = [await personOf(moved), await personOf(kept)];
    const next = [event(org, moved, 'updatecart', cart(3))];
    if (fresh) {
      const { send, held } = fresh.toSend(visitorTouches(next), profileMarks(next).marks, onCitusCluster());
      expect({ send: send.length, held: held.length }, 'the premise: fresh, so held (sent under Citus)').to.deep.equal(
        onCitusCluster() ? { send: 1, held: 0 } : { send: 0, held: 1 },
      );
    }
    let batch: Promise<void> | undefined;
    await srv.deps.db.transaction().execute(async (tx) => {
      await sql`UPDATE visitors SET person_id = ${keep}::bigint WHERE org_id = ${org} AND core_id = ${moved}`.execute(tx);
      await sql`DELETE FROM persons WHERE org_id = ${org} AND id = ${gone}::bigint`.execute(tx);
      // the upsert's lock (a visitor sent) or the share lock (held) waits for the merge, then sees the latest version
      batch = storePlainBatch(srv.deps.db, next, fresh);
      await untilWaitingOnLock(srv.deps.db, 'INSERT INTO visitors', 'the batch waits for the merge');
    });
    await batch;
    const persons = (
      await sql<{ id: string; last_cart_product_id: string }>`
        SELECT id::text, last_cart_product_id::text FROM persons WHERE org_id = ${org} ORDER BY id`.execute(srv.deps.db)
    ).rows;
    expect(persons, 'the cart went to the kept person; the merged one is not written again').to.deep.equal([{ id: keep, last_cart_product_id: '3' }]);
  }

  it('writes the profile to the person a concurrent merge moved the visitor to, once that merge commits', () => cartDuringMerge());

  it('writes the profile to the person a concurrent merge moved the visitor to when the process knows it fresh (held by a share lock, not sent)', () =>
    cartDuringMerge(new FreshVisitors()));

  it('drops the mark of a held visitor that an erasure deleted meanwhile, and stores its event', async () => {
    const org = (await newMerchant(srv, account)).organisation.id;
    const fresh = new FreshVisitors();
    const core = unique('c');
    await storePlainBatch(srv.deps.db, [event(org, core, 'updatecart', cart(1))], fresh);
    // as another process's erasure, before its notification reached this one
    await sql`DELETE FROM persons WHERE org_id = ${org}`.execute(srv.deps.db);
    await sql`DELETE FROM visitors WHERE org_id = ${org}`.execute(srv.deps.db);
    await storePlainBatch(srv.deps.db, [event(org, core, 'updatecart', cart(2))], fresh);
    const count = async (table: 'persons' | 'visitors' | 'events') =>
      Number((await sql<{ n: string }>`SELECT count(*) AS n FROM ${sql.table(table)} WHERE org_id = ${org}`.execute(srv.deps.db)).rows[0]!.n);
    // under Citus the visitor is sent and made again, with its profile
    expect({ persons: await count('persons'), visitors: await count('visitors'), events: await count('events') }).to.deep.equal(
      onCitusCluster() ? { persons: 1, visitors: 1, events: 2 } : { persons: 0, visitors: 0, events: 2 },
    );
  });

  it('sends one statement per batch of carts, for new and returning visitors, where the transaction sent 4 and 5', async () => {
    const org = (await newMerchant(srv, account)).organisation.id;
    const carts = (cores: string[]) => cores.map((c, i) => event(org, c, 'updatecart', cart(i + 1)));
    const cores = [unique('c'), unique('c'), unique('c')];
    // the organisation's targets are read once (then cached): not part of the batch
    await storeBatch(srv.deps, srv.deps.db, carts([unique('c')]));
    expect(await statements(() => storeBatch(srv.deps, srv.deps.db, carts(cores))), 'new visitors').to.have.length(1);
    expect(await statements(() => storeBatch(srv.deps, srv.deps.db, carts(cores))), 'returning visitors').to.have.length(1);
    const others = [unique('c'), unique('c'), unique('c')];
    expect(await statements(() => viaTransaction(carts(others))), 'the transaction, new visitors').to.have.length(4);
    expect(await statements(() => viaTransaction(carts(others))), 'the transaction, returning visitors').to.have.length(5);
  });
});
