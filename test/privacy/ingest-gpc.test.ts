// Global Privacy Control in the tracking path (src/privacy/ingest-privacy.service.ts):
// a request with `Sec-GPC: 1` to an organisation with honor_gpc (the
// default) is answered as usual; an identify stores no contact and no name
// and notifies nobody; its events are stored but never linked to a person
// (no recent activity, no product catalogue entry, no corex_id stitching) nor
// exported, though the visitor already was a contact. With honor_gpc false,
// or any other value of the header, the same requests behave as before.
// The dispatcher runs and a real receiver on 127.0.0.1 takes every delivery.
import { expect } from 'chai';
import { BatchPrivacy } from '../../src/privacy/ingest-privacy.service.ts';
import { storeBatch } from '../../src/tracking/batch.service.ts';
import { isPlainBatch } from '../../src/tracking/plain-batch.service.ts';
import { type Account, newAccount, unique } from '../support/accounts.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { TestReceiver } from '../support/receiver.ts';
import { drained, itemsOf, newShop, type Shop, stored } from '../support/ingest.ts';
import { b64url } from '../support/payload.ts';
import type { BodyOf } from '../support/client.ts';

const GPC = { 'sec-gpc': '1' };

describe('privacy: Global Privacy Control at ingest', function () {
  this.timeout(60_000);
  let srv: TestServer;
  let account: Account;
  let receiver: TestReceiver;

  before(async () => {
    receiver = await TestReceiver.start(() => ({ status: 204 }));
    srv = await startTestServer({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' }, { dispatcher: true });
    account = await newAccount(srv);
  });
  after(async () => {
    await srv?.stop();
    await receiver?.close();
  });

  /** A visitor of the shop sending requests with the given extra headers. */
  function visitor(shop: Shop, corex = 'null') {
    const v = { roaming: unique('r'), core: unique('c') };
    const path = (name: string) => `/jsv1/${shop.org}/${v.roaming}/${v.core}/${corex}/event/${name}`;
    return {
      ...v,
      async identify(payload: Record<string, string>, headers: Record<string, string> = {}) {
        const r = await srv.api.get(`/jsv1/identify/${shop.org}/${v.roaming}/${v.core}/${b64url(payload)}`, { headers });
        expect(r.status, r.text).to.equal(200);
        expect(r.body).to.deep.equal({ core_id: v.core });
      },
      async browse(product: number, headers: Record<string, string> = {}) {
        const url = `https://${shop.domain}/p/${product}`;
        for (const [name, body] of [
          ['productview', { product_id: product, price: 1, product_url: url }],
          ['updatecart', { product_id: product, cart_url: `https://${shop.domain}/cart` }],
        ] as const) {
          const r = await srv.api.post(path(name), body, { headers });
          expect(r.status, r.text).to.equal(202);
          expect(r.body).to.deep.equal({ status: 'accepted' });
        }
        // and the pixel (the Koa path only)
        const pixel = await srv.api.get(`${path('view')}?page=${encodeURIComponent(url)}`, { headers });
        expect(pixel.status, pixel.text).to.equal(200);
      },
      async read() {
        const r = await srv.api.get(`/v1/rest/${account.platform}/organisations/${shop.org}/visitors/${v.core}`, { token: account.token });
        expect(r.status, r.text).to.equal(200);
        return r.body as { name: string | null; contacts: unknown[]; recent: { last_view: string[]; last_addtocart: string | null } };
      },
    };
  }

  it('Sec-GPC: 1 identifies as usual but stores no contact and no name, and notifies nobody', async () => {
    const shop = await newShop(srv, account, receiver);
    const v = visitor(shop);
    await v.identify({ email: 'Private.Person@Example.com', phone: '+1 555 0142', name: 'Private Person' }, GPC);
    const read = await v.read();
    expect(read.contacts).to.deep.equal([]);
    expect(read.name).to.equal(null);
    const s = await stored(srv, shop.org);
    expect(s.contacts).to.deep.equal([]);
    expect(s.links).to.deep.equal([]);
    expect(s.deliveries).to.deep.equal([]);
    // and any other value is no signal
    const w = visitor(shop);
    await w.identify({ email: 'signal@example.com', name: 'Signal' }, { 'sec-gpc': '0' });
    expect((await w.read()).name).to.equal('Signal');
    expect((await stored(srv, shop.org)).deliveries).to.deep.equal(['matched:signal@example.com']);
    const got = await drained(srv, receiver, shop);
    expect(got.map((g) => JSON.parse(g.body).contact)).to.deep.equal(['signal@example.com']);
  });

  it("stores a GPC request's events without linking them: no recent activity, no catalogue entry, no corex_id, no export, though the visitor is a contact", async () => {
    const shop = await newShop(srv, account, receiver);
    const v = visitor(shop, 'cust-77');
    await v.identify({ email: 'known@example.com' });
    await v.browse(101, GPC);
    const s = await stored(srv, shop.org);
    expect(s.events.map((e) => [e.name, e.corex_id])).to.deep.equal([
      ['productview', null],
      ['updatecart', null],
      ['view', null],
    ]);
    expect(s.visitors.map((x) => x.corex_id)).to.deep.equal([null]);
    expect(s.products).to.deep.equal([]);
    expect((await v.read()).recent).to.deep.equal({ last_view: [], last_addtocart: null });
    expect(s.deliveries).to.deep.equal(['matched:known@example.com']);

    // the same visitor without the signal: linked and exported as always
    await v.browse(102);
    const after = await stored(srv, shop.org);
    expect(after.products).to.deep.equal([102]);
    expect(after.visitors.map((x) => x.corex_id)).to.deep.equal(['cust-77']);
    expect((await v.read()).recent.last_view).to.deep.equal([`https://${shop.domain}/p/102`]);
    expect(after.deliveries).to.deep.equal(['matched:known@example.com', ...Array(3).fill('event:known@example.com')]);
    const got = await drained(srv, receiver, shop);
    const exported = got.map((g) => JSON.parse(g.body)).filter((b) => b.medium === 'event');
    expect(exported.map((b) => b.properties.product_id ?? b.properties.page)).to.have.members([102, 102, `https://${shop.domain}/p/102`]);
  });

  it('a batch mixing GPC and other requests: only the others link and notify (the plain batch takes GPC events of any kind)', async () => {
    const shop = await newShop(srv, account, receiver);
    const [quiet, open] = [unique('c'), unique('c')];
    // GPC events only, of kinds identity records, for an organisation that exports: one plain statement
    const first = await itemsOf(shop, [
      { core: quiet, gpc: true, event: 'productview', product: 1, corex: 'x-1' },
      { core: open, gpc: true, event: 'productview', product: 2 },
    ]);
    const { items: screened } = await BatchPrivacy.screen(srv.deps, srv.deps.db, first);
    expect(isPlainBatch(screened, () => true)).to.equal(true);
    await storeBatch(srv.deps, srv.deps.db, first);
    await storeBatch(
      srv.deps,
      srv.deps.db,
      await itemsOf(shop, [
        { core: quiet, gpc: true, identify: { email: 'quiet@example.com', name: 'Quiet' } },
        { core: open, identify: { email: 'open@example.com', name: 'Open' } },
        { core: quiet, gpc: true, event: 'productview', product: 3 },
        { core: open, event: 'productview', product: 4 },
      ]),
    );
    const s = await stored(srv, shop.org);
    expect(s.visitors.map((x) => [x.core_id, x.name, x.corex_id])).to.have.deep.members([
      [quiet, null, null],
      [open, 'Open', null],
    ]);
    expect(s.events).to.have.length(4);
    expect(s.contacts).to.deep.equal(['EMAIL:open@example.com']);
    expect(s.products).to.deep.equal([4]);
    expect(s.deliveries).to.deep.equal(['matched:open@example.com', 'event:open@example.com']);
  });

  it('with honor_gpc false the same requests behave as before', async () => {
    const shop = await newShop(srv, account, receiver);
    const off = await srv.api.request<BodyOf<'updateOrganisationSettings'>>('PATCH', `/v1/rest/${account.platform}/organisations/${shop.org}`, {
      body: { honor_gpc: false },
      token: account.token,
    });
    expect(off.status, off.text).to.equal(200);
    expect(off.body.honor_gpc).to.equal(false);
    const v = visitor(shop, 'cust-88');
    await v.identify({ email: 'ignored.signal@example.com', name: 'Ignored' }, GPC);
    await v.browse(201, GPC);
    const read = await v.read();
    expect(read.name).to.equal('Ignored');
    expect(read.contacts).to.have.length(1);
    expect(read.recent.last_view).to.deep.equal([`https://${shop.domain}/p/201`]);
    const s = await stored(srv, shop.org);
    expect(s.products).to.deep.equal([201]);
    expect(s.visitors.map((x) => x.corex_id)).to.deep.equal(['cust-88']);
    expect(s.deliveries).to.deep.equal(['matched:ignored.signal@example.com', ...Array(3).fill('event:ignored.signal@example.com')]);
    expect(await drained(srv, receiver, shop)).to.have.length(4);
  });
});
