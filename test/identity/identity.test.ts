import { expect } from 'chai';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { type Account, newAccount, newMerchant, newWebhook, unique } from '../support/accounts.ts';
import { b64url } from '../support/payload.ts';
import type { BodyOf } from '../support/client.ts';

describe('identity: stitching and recent activity', () => {
  let srv: TestServer;
  let account: Account;
  before(async () => {
    srv = await startTestServer();
    account = await newAccount(srv);
  });
  after(() => srv.stop());

  async function shop() {
    const { id: org, domain } = (await newMerchant(srv, account)).organisation;
    // product and cart URLs under the organisation's own domain (others never reach a profile)
    const site = (path: string) => `https://${domain}${path}`;
    const p = (n: number) => site(`/p/${n}`);
    const mk = (corex = 'null') => {
      const v = { roaming: unique('r'), core: unique('c'), corex };
      const path = (name: string) => `/jsv1/${org}/${v.roaming}/${v.core}/${v.corex}/event/${name}`;
      return {
        ...v,
        async view(productId: number, url = p(productId)) {
          const r = await srv.api.post(path('productview'), { product_id: productId, price: 1, product_url: url });
          expect(r.status, r.text).to.equal(202);
        },
        async cart(productId: number, cartUrl = site('/cart')) {
          const r = await srv.api.post(path('updatecart'), { product_id: productId, cart_url: cartUrl });
          expect(r.status, r.text).to.equal(202);
        },
        async buy() {
          expect((await srv.api.post(path('buy'), { order_id: unique('o') })).status).to.equal(202);
        },
        async identify(payload: Record<string, string>) {
          const r = await srv.api.get(`/jsv1/identify/${org}/${v.roaming}/${v.core}/${b64url(payload)}`);
          expect(r.status, r.text).to.equal(200);
        },
        async read() {
          const r = await srv.api.get(`/v1/rest/${account.platform}/organisations/${org}/visitors/${v.core}`, { token: account.token });
          expect(r.status, r.text).to.equal(200);
          return r.body as { contacts: { type: string; value: string }[]; recent: { last_view: string[]; last_addtocart: string | null } };
        },
      };
    };
    return { org, visitor: mk, p, site };
  }

  it('keeps the last 3 distinct product views, most recent first', async () => {
    const { visitor, p } = await shop();
    const v = visitor();
    for (const n of [1, 2, 1, 3, 4, 4]) await v.view(n);
    expect((await v.read()).recent.last_view).to.deep.equal([p(4), p(3), p(1)]);
  });

  it('resolves last_addtocart to the latest URL seen for the product, else the cart URL', async () => {
    const { visitor, site } = await shop();
    const v = visitor();
    await v.cart(70, site('/cart?x=1'));
    expect((await v.read()).recent.last_addtocart).to.equal(site('/cart?x=1'));
    const other = visitor();
    await other.view(70, site('/products/seventy'));
    expect((await v.read()).recent.last_addtocart).to.equal(site('/products/seventy'));
    await other.view(70, site('/products/seventy-v2'));
    await v.cart(71);
    await v.cart(70);
    expect((await v.read()).recent.last_addtocart).to.equal(site('/products/seventy-v2'));
    const idle = visitor();
    await idle.identify({ name: 'Idle' });
    expect((await idle.read()).recent).to.deep.equal({ last_view: [], last_addtocart: null });
  });

  it('stitches visitors that share a contact and merges their activity by time', async () => {
    const { visitor, p } = await shop();
    const a = visitor();
    const b = visitor();
    await a.view(1);
    await b.view(2);
    await a.view(3);
    await a.cart(1);
    await a.identify({ email: 'same@s.example' });
    await b.identify({ email: 'SAME@s.example' });
    const rb = await b.read();
    expect(rb.recent.last_view).to.deep.equal([p(3), p(2), p(1)]);
    expect(rb.recent.last_addtocart).to.equal(p(1));
    expect(rb.contacts).to.deep.equal([{ type: 'EMAIL', value: 'same@s.example', verified: false }]);
    await b.view(4);
    expect((await a.read()).recent.last_view).to.deep.equal([p(4), p(3), p(2)]);
  });

  it('stitches visitors that share a non-null corex_id, and not those with corex null', async () => {
    const { visitor, p } = await shop();
    const corex = unique('cust');
    const a = visitor(corex);
    const b = visitor(corex);
    const c = visitor();
    const d = visitor();
    await a.view(1);
    await b.view(2);
    await c.view(3);
    await d.view(4);
    expect((await a.read()).recent.last_view).to.deep.equal([p(2), p(1)]);
    expect((await c.read()).recent.last_view).to.deep.equal([p(3)]);
  });

  it('joins two known persons into one when a visitor links both their contacts', async () => {
    const { visitor } = await shop();
    const a = visitor();
    const b = visitor();
    const c = visitor();
    await a.identify({ email: 'one@s.example' });
    await b.identify({ phone: '+1 555 0101' });
    await c.identify({ email: 'one@s.example', phone: '+15550101' });
    expect((await a.read()).contacts).to.have.deep.members([
      { type: 'EMAIL', value: 'one@s.example', verified: false },
      { type: 'PHONE', value: '+15550101', verified: false },
    ]);
  });

  it('exports events of a visitor stitched by corex_id to the contacts of its person', async () => {
    const { org, visitor } = await shop();
    const hook = await newWebhook(srv, account, org, { do_events: true, do_contacts: true });
    const corex = unique('cust');
    const known = visitor(corex);
    await known.view(1); // events carry the corex_id; identify calls do not
    await known.identify({ email: 'known@s.example' });
    const otherDevice = visitor(corex);
    await otherDevice.buy();
    const rows = await srv.deps.db
      .selectFrom('deliveries')
      .select(['kind', 'body', 'integration_id'])
      .where('org_id', '=', org)
      .orderBy('id')
      .execute();
    expect(rows.map((r) => [r.kind, JSON.parse(r.body).contact])).to.deep.equal([
      ['matched', 'known@s.example'],
      ['event', 'known@s.example'],
    ]);
    expect(rows.every((r) => r.integration_id === hook.id)).to.equal(true);
  });

  it('sends the merged activity in the contact match of a newly linked visitor', async () => {
    const { org, visitor, p } = await shop();
    await newWebhook(srv, account, org, { do_events: false, do_contacts: true });
    const a = visitor();
    const b = visitor();
    await a.view(1);
    await a.identify({ email: 'm@s.example' });
    await b.view(2);
    await b.cart(2);
    await b.identify({ email: 'm@s.example' });
    const rows = await srv.deps.db.selectFrom('deliveries').select('body').where('org_id', '=', org).orderBy('id').execute();
    const bodies = rows.map((r) => JSON.parse(r.body));
    expect(bodies).to.have.length(2); // one per new (visitor, contact) link
    expect(bodies[0]).to.not.have.property('last_addtocart');
    expect(bodies[0].last_view).to.deep.equal([p(1)]);
    expect(bodies[1].last_view).to.deep.equal([p(2), p(1)]);
    expect(bodies[1].last_addtocart).to.equal(p(2));
  });

  it('reads visitors of the caller only, and lists them with contacts_only', async () => {
    const { org, visitor } = await shop();
    const a = visitor();
    const b = visitor();
    await a.view(1);
    await b.identify({ email: 'listed@s.example' });
    const all = await srv.api.get<BodyOf<'listVisitors'>>(`/v1/rest/${account.platform}/organisations/${org}/visitors?limit=1`, {
      token: account.token,
    });
    expect(all.body.items).to.have.length(1);
    expect(all.body.items[0]!.core_id).to.equal(b.core);
    const next = await srv.api.get<BodyOf<'listVisitors'>>(
      `/v1/rest/${account.platform}/organisations/${org}/visitors?limit=1&cursor=${all.body.next_cursor}`,
      {
        token: account.token,
      },
    );
    expect(next.body.items.map((v: { core_id: string }) => v.core_id)).to.deep.equal([a.core]);
    expect(next.body.next_cursor).to.equal(null);
    const known = await srv.api.get<BodyOf<'listVisitors'>>(`/v1/rest/${account.platform}/organisations/${org}/visitors?contacts_only=true`, {
      token: account.token,
    });
    expect(known.body.items.map((v: { core_id: string }) => v.core_id)).to.deep.equal([b.core]);
    const stranger = await newAccount(srv, 'other');
    const denied = await srv.api.get(`/v1/rest/other/organisations/${org}/visitors/${a.core}`, { token: stranger.token });
    expect(denied.status).to.equal(403);
    const missing = await srv.api.get(`/v1/rest/${account.platform}/organisations/${org}/visitors/nobody`, { token: account.token });
    expect(missing.status).to.equal(404);
  });

  it('pages events newest first and filters by name; a forged cursor is a 400', async () => {
    const { org, visitor } = await shop();
    const v = visitor();
    for (let i = 0; i < 5; i++) await v.view(i);
    await v.buy();
    const base = `/v1/rest/${account.platform}/organisations/${org}/events`;
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const r: { body: { items: { id: string; name: string }[]; next_cursor: string | null } } = await srv.api.get(
        `${base}?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
        { token: account.token },
      );
      seen.push(...r.body.items.map((e) => e.name));
      cursor = r.body.next_cursor;
    } while (cursor);
    expect(seen).to.deep.equal(['buy', 'productview', 'productview', 'productview', 'productview', 'productview']);
    const buys = await srv.api.get<BodyOf<'listEvents'>>(`${base}?name=buy`, { token: account.token });
    expect(buys.body.items).to.have.length(1);
    const forged = Buffer.from(JSON.stringify({ p: { at: 'yesterday', id: 1 }, f: 'x' })).toString('base64url');
    expect((await srv.api.get(`${base}?cursor=${forged}`, { token: account.token })).status).to.equal(400);
  });
});
