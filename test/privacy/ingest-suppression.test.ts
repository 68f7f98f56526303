// The suppression list in the tracking path (src/privacy/ingest-privacy.service.ts):
// an identify whose email, phone or core_id is suppressed answers as usual
// and stores nothing that identifies the person and sends nothing; a
// suppressed core_id stores nothing at all; the events of a person with a
// suppressed contact are exported nowhere. The lookup is one statement per
// suppressing organisation per batch, none for the others. The dispatcher
// runs and a real receiver on 127.0.0.1 takes every delivery.
import { expect } from 'chai';
import { storeBatch } from '../../src/tracking/batch.service.ts';
import { type Account, newAccount, unique } from '../support/accounts.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { TestReceiver } from '../support/receiver.ts';
import { drained, itemsOf, newShop, stored, suppress } from '../support/ingest.ts';
import { b64url } from '../support/payload.ts';
import { onStatements } from '../support/statements.ts';

describe('privacy: the suppression list at ingest', function () {
  this.timeout(60_000);
  let srv: TestServer;
  let account: Account;
  let receiver: TestReceiver;
  let recording = false;
  let lookups: string[] = [];
  let restore = () => {};

  before(async () => {
    restore = onStatements((text) => {
      if (recording && /\bprivacy_suppressions\b/i.test(text)) lookups.push(text);
    });
    receiver = await TestReceiver.start(() => ({ status: 204 }));
    srv = await startTestServer({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' }, { dispatcher: true });
    account = await newAccount(srv);
  });
  after(async () => {
    restore();
    await srv?.stop();
    await receiver?.close();
  });

  /** The statements on the suppression list sent while `fn` runs. */
  async function lookupsDuring(fn: () => Promise<void>): Promise<string[]> {
    lookups = [];
    recording = true;
    try {
      await fn();
    } finally {
      recording = false;
    }
    return lookups;
  }

  it('a suppressed email or phone identifies again without a contact, a name or a notification; an unsuppressed identify of the same batch is linked and notified', async () => {
    const shop = await newShop(srv, account, receiver);
    await suppress(srv, shop.org, 'email', 'Erased.Person@Example.com');
    await suppress(srv, shop.org, 'phone', '+44 20 7946 0000');
    const [erased, byPhone, kept] = [unique('c'), unique('c'), unique('c')];

    // over HTTP: the same answer as any identify
    const r = await srv.api.get(
      `/jsv1/identify/${shop.org}/r1/${erased}/${b64url({ email: '  erased.person@EXAMPLE.com ', name: 'Erased Person' })}`,
    );
    expect(r.status, r.text).to.equal(200);
    expect(r.body).to.deep.equal({ core_id: erased });

    // one batch: a suppressed email (with an unsuppressed phone beside it), a suppressed phone written otherwise, one kept
    const items = await itemsOf(shop, [
      { core: erased, identify: { email: 'Erased.Person@example.com', phone: '+1 555 0100', name: 'Erased Person' } },
      { core: byPhone, identify: { phone: '+44 (20) 7946-0000', name: 'Phoned Person' } },
      { core: kept, identify: { email: 'kept@example.com', name: 'Kept Person' } },
      { core: erased, event: 'productview', product: 3 },
    ]);
    const statements = await lookupsDuring(() => storeBatch(srv.deps, srv.deps.db, items));
    // one lookup for the whole batch, naming its organisation
    expect(statements).to.have.length(1);
    expect(statements[0]).to.match(/org_id = \$1/);

    const s = await stored(srv, shop.org);
    expect(s.contacts).to.deep.equal(['EMAIL:kept@example.com']);
    expect(s.links).to.deep.equal([kept]);
    expect(s.visitors.map((v) => [v.core_id, v.name])).to.have.deep.members([
      [erased, null],
      [byPhone, null],
      [kept, 'Kept Person'],
    ]);
    // the visitor's own activity is kept, anonymous: its event is stored and exported to no one (no contact)
    expect(s.events.map((e) => [e.core_id, e.name])).to.deep.equal([[erased, 'productview']]);
    expect(s.deliveries).to.deep.equal(['matched:kept@example.com']);
    const got = await drained(srv, receiver, shop);
    expect(got.map((g) => JSON.parse(g.body).contact)).to.deep.equal(['kept@example.com']);
    for (const g of got) expect(g.body).to.not.match(/erased|7946|555 ?0100|Phoned/i);
  });

  it('a suppressed core_id stores nothing at all, on the plain and the transaction path, and answers as usual', async () => {
    const shop = await newShop(srv, account, receiver);
    const [gone, other] = [unique('c'), unique('c')];
    await suppress(srv, shop.org, 'core_id', gone);

    const view = await srv.api.post(`/jsv1/${shop.org}/r1/${gone}/cust-1/event/view`, { page: `https://${shop.domain}/` });
    expect(view.status, view.text).to.equal(202);
    expect(view.body).to.deep.equal({ status: 'accepted' });
    const id = await srv.api.get(`/jsv1/identify/${shop.org}/r1/${gone}/${b64url({ email: 'gone@example.com', name: 'Gone' })}`);
    expect(id.status, id.text).to.equal(200);
    expect(id.body).to.deep.equal({ core_id: gone });
    // a plain batch (views only) and a transaction (an identify) mixing it with another visitor
    await storeBatch(
      srv.deps,
      srv.deps.db,
      await itemsOf(shop, [
        { core: gone, event: 'view' },
        { core: other, event: 'view' },
      ]),
    );
    await storeBatch(
      srv.deps,
      srv.deps.db,
      await itemsOf(shop, [
        { core: gone, event: 'productview', product: 5 },
        { core: gone, identify: { email: 'gone@example.com' } },
        { core: other, identify: { email: 'other@example.com' } },
        { core: other, event: 'productview', product: 6 },
      ]),
    );

    const s = await stored(srv, shop.org);
    expect(s.visitors.map((v) => v.core_id)).to.deep.equal([other]);
    expect(s.events.map((e) => e.core_id)).to.deep.equal([other, other]);
    expect(s.contacts).to.deep.equal(['EMAIL:other@example.com']);
    expect(s.products).to.deep.equal([6]);
    expect(s.deliveries).to.deep.equal(['matched:other@example.com', 'event:other@example.com']);
    const got = await drained(srv, receiver, shop);
    expect(got).to.have.length(2);
    for (const g of got) expect(g.body).to.not.include(gone);
  });

  it('exports the events of a person with a suppressed contact nowhere (suppressed while still stored)', async () => {
    const shop = await newShop(srv, account, receiver);
    const [quiet, loud] = [unique('c'), unique('c')];
    for (const [core, email] of [
      [quiet, 'quiet@example.com'],
      [loud, 'loud@example.com'],
    ]) {
      const r = await srv.api.get(`/jsv1/identify/${shop.org}/r1/${core}/${b64url({ email })}`);
      expect(r.status, r.text).to.equal(200);
    }
    // e.g. an export with `suppress`: the person stays stored, the list now names its email
    await suppress(srv, shop.org, 'email', 'quiet@example.com');
    for (const core of [quiet, loud]) {
      const r = await srv.api.post(`/jsv1/${shop.org}/r1/${core}/null/event/view`, { page: `https://${shop.domain}/` });
      expect(r.status, r.text).to.equal(202);
    }
    const s = await stored(srv, shop.org);
    expect(s.events).to.have.length(2);
    expect(s.deliveries).to.deep.equal(['matched:quiet@example.com', 'matched:loud@example.com', 'event:loud@example.com']);
    const got = await drained(srv, receiver, shop);
    expect(got.map((g) => `${JSON.parse(g.body).medium}:${JSON.parse(g.body).contact}`)).to.have.members(s.deliveries);
  });

  it('looks the list up once per suppressing organisation per batch, and never for an organisation without one', async () => {
    const [a, b, none] = [await newShop(srv, account, receiver), await newShop(srv, account, receiver), await newShop(srv, account, receiver)];
    await suppress(srv, a.org, 'email', 'someone@example.com');
    await suppress(srv, b.org, 'email', 'someone@example.com');
    const steps = (run: string) => [
      { core: `${run}-1`, event: 'view' as const },
      { core: `${run}-1`, identify: { email: `${run}@example.com` } },
      { core: `${run}-2`, identify: { email: 'someone@example.com', phone: '+1 555 0199' } },
      { core: `${run}-2`, event: 'productview' as const, product: 1 },
    ];
    const run = unique('b');
    const plain = await itemsOf(none, steps(run));
    const unsuppressed = await lookupsDuring(() => storeBatch(srv.deps, srv.deps.db, plain));
    expect(unsuppressed).to.deep.equal([]);
    // nothing suppressed there: both identifies linked
    expect((await stored(srv, none.org)).contacts).to.have.length(3);

    const items = [...(await itemsOf(a, steps(run))), ...(await itemsOf(b, steps(run))), ...(await itemsOf(none, steps(unique('b'))))];
    const both = await lookupsDuring(() => storeBatch(srv.deps, srv.deps.db, items));
    expect(both).to.have.length(2);
    for (const shop of [a, b]) expect((await stored(srv, shop.org)).contacts).to.deep.equal([`EMAIL:${run}@example.com`]);
  });
});
