// Bots kept out (src/tracking/bots.rules.ts, README "Bots"): a tracking request
// from a known crawler or headless browser (its User-Agent), or that the
// tracker marked `?webdriver=1`, is answered exactly as any other (status and
// body) but stores nothing (no visitor, event, contact or link) and notifies
// no one; it is counted on /metrics and in the organisation's stats by
// reason. Plain HTTP clients and requests without a User-Agent are no bots.
// With filter_bots false the same requests are stored as always. The
// dispatcher runs and a real receiver on 127.0.0.1 takes every delivery.
import http from 'node:http';
import { expect } from 'chai';
import { type Account, newAccount, unique } from '../support/accounts.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { TestReceiver } from '../support/receiver.ts';
import { passesEventually } from '../support/wait.ts';
import { drained, newShop, type Shop, stored } from '../support/ingest.ts';
import { b64url } from '../support/payload.ts';
import type { OrgId } from '../../src/db/tenancy.ts';
import type { BodyOf } from '../support/client.ts';

const GOOGLEBOT =
  'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Googlebot/2.1; +http://www.google.com/bot.html) Chrome/140.0.7339.0 Safari/537.36';
const HEADLESS = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/140.0.0.0 Safari/537.36';
const CHROME = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/140.0.0.0 Safari/537.36';

describe('tracking: known bots are answered as usual and store nothing (filter_bots)', function () {
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

  const orgPath = (org: OrgId) => `/v1/rest/${account.platform}/organisations/${org}`;

  async function botMetric(): Promise<Record<string, number>> {
    const text = await (await fetch(`${srv.url}/metrics`)).text();
    const out: Record<string, number> = {};
    for (const m of text.matchAll(/^trackway_bot_requests_total\{reason="([a-z_]+)"\} (\d+)$/gm)) out[m[1]!] = Number(m[2]);
    return out;
  }

  /**
   * A visitor of the shop whose every request carries these headers and query:
   * an identify, two events by the fast path (a plain POST) and the pixel
   * (the Koa path), each answer checked against what any request gets.
   */
  async function visit(shop: Shop, headers: Record<string, string>, query = '', email = `${unique('v')}@example.com`) {
    const v = { roaming: unique('r'), core: unique('c') };
    const path = (name: string) => `/jsv1/${shop.org}/${v.roaming}/${v.core}/null/event/${name}`;
    const id = await srv.api.get(`/jsv1/identify/${shop.org}/${v.roaming}/${v.core}/${b64url({ email, name: 'Crawly' })}${query}`, { headers });
    expect(id.status, id.text).to.equal(200);
    expect(id.body).to.deep.equal({ core_id: v.core });
    const product = `https://${shop.domain}/p/7`;
    for (const [name, body] of [
      ['productview', { product_id: 7, price: 1, product_url: product }],
      ['updatecart', { product_id: 7, cart_url: `https://${shop.domain}/cart` }],
    ] as const) {
      const r = await srv.api.post(`${path(name)}${query}`, body, { headers });
      expect(r.status, r.text).to.equal(202);
      expect(r.body).to.deep.equal({ status: 'accepted' });
    }
    const pixel = await srv.api.get(`${path('view')}?page=${encodeURIComponent(product)}${query.replace('?', '&')}`, { headers });
    expect(pixel.status, pixel.text).to.equal(200);
    expect(pixel.headers.get('content-type')).to.equal('image/gif');
    return { ...v, email };
  }

  it('a crawler or a headless browser (User-Agent) gets the usual answers, and nothing is stored or sent', async () => {
    const shop = await newShop(srv, account, receiver);
    const before = await botMetric();
    const crawler = await visit(shop, { 'user-agent': GOOGLEBOT });
    const headless = await visit(shop, { 'user-agent': HEADLESS });
    let s = await stored(srv, shop.org);
    expect(s.visitors).to.deep.equal([]);
    expect(s.events).to.deep.equal([]);
    expect(s.contacts).to.deep.equal([]);
    expect(s.links).to.deep.equal([]);
    expect(s.deliveries).to.deep.equal([]);
    expect((await botMetric()).user_agent).to.equal(before.user_agent! + 8);

    // a shopper in a real browser afterwards: stored and notified; the receiver gets only the shopper's
    const shopper = await visit(shop, { 'user-agent': CHROME });
    s = await stored(srv, shop.org);
    expect(s.visitors.map((x) => x.core_id)).to.deep.equal([shopper.core]);
    expect(s.events.map((e) => [e.core_id, e.name])).to.deep.equal([
      [shopper.core, 'productview'],
      [shopper.core, 'updatecart'],
      [shopper.core, 'view'],
    ]);
    expect(s.contacts).to.deep.equal([`EMAIL:${shopper.email}`]);
    const got = await drained(srv, receiver, shop);
    const contacts = got.map((g) => (JSON.parse(g.body) as { contact: string }).contact);
    expect(contacts).to.include(shopper.email);
    expect(contacts).to.not.include.members([crawler.email, headless.email]);
  });

  it('?webdriver=1 (what the tracker adds under automation) keeps a request out too; any other value is no signal', async () => {
    const shop = await newShop(srv, account, receiver);
    const before = await botMetric();
    await visit(shop, { 'user-agent': CHROME }, '?webdriver=1');
    expect(await stored(srv, shop.org)).to.deep.include({ visitors: [], events: [], contacts: [], deliveries: [] });
    const after = await botMetric();
    expect(after.webdriver).to.equal(before.webdriver! + 4);
    expect(after.user_agent).to.equal(before.user_agent);

    const human = await visit(shop, { 'user-agent': CHROME }, '?webdriver=0');
    expect((await stored(srv, shop.org)).visitors.map((x) => x.core_id)).to.deep.equal([human.core]);
  });

  it('plain HTTP clients (curl, node, python-requests) and requests without a User-Agent are stored as usual', async () => {
    const shop = await newShop(srv, account, receiver);
    const cores: string[] = [];
    for (const ua of ['curl/8.5.0', 'python-requests/2.31.0', 'node']) cores.push((await visit(shop, { 'user-agent': ua })).core);
    // no User-Agent header at all (fetch always sends one)
    const core = unique('c');
    const status = await new Promise<number>((resolve, reject) => {
      const body = JSON.stringify({ page: `https://${shop.domain}/` });
      const req = http.request(
        `${srv.url}/jsv1/${shop.org}/${unique('r')}/${core}/null/event/view`,
        { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode!));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
    expect(status).to.equal(202);
    cores.push(core);
    expect((await stored(srv, shop.org)).visitors.map((x) => x.core_id)).to.have.members(cores);
  });

  it('filter_bots is on by default and can be turned off: then bots are stored and notify as always', async () => {
    const shop = await newShop(srv, account, receiver);
    const read = await srv.api.get<BodyOf<'getOrganisation'>>(orgPath(shop.org), { token: account.token });
    expect(read.body.filter_bots).to.equal(true);
    const off = await srv.api.request<BodyOf<'updateOrganisationSettings'>>('PATCH', orgPath(shop.org), {
      body: { filter_bots: false },
      token: account.token,
    });
    expect(off.status, off.text).to.equal(200);
    expect(off.body.filter_bots).to.equal(false);
    const bad = await srv.api.request('PATCH', orgPath(shop.org), { body: { filter_bots: 'no' }, token: account.token });
    expect(bad.status, bad.text).to.equal(400);

    const before = await botMetric();
    const crawler = await visit(shop, { 'user-agent': GOOGLEBOT });
    const automated = await visit(shop, { 'user-agent': CHROME }, '?webdriver=1');
    const s = await stored(srv, shop.org);
    expect(s.visitors.map((x) => x.core_id)).to.have.members([crawler.core, automated.core]);
    expect(s.events).to.have.length(6);
    expect(s.contacts).to.have.members([`EMAIL:${crawler.email}`, `EMAIL:${automated.email}`]);
    expect(await botMetric()).to.deep.equal(before);
    const got = await drained(srv, receiver, shop);
    expect(got.map((g) => (JSON.parse(g.body) as { contact: string }).contact)).to.include.members([crawler.email, automated.email]);

    // and on again: kept out from the next request (the policy is cached; a change drops it)
    const on = await srv.api.request<BodyOf<'updateOrganisationSettings'>>('PATCH', orgPath(shop.org), {
      body: { filter_bots: true },
      token: account.token,
    });
    expect(on.body.filter_bots).to.equal(true);
    await visit(shop, { 'user-agent': GOOGLEBOT });
    expect((await stored(srv, shop.org)).visitors).to.have.length(2);
  });

  it("counts the organisation's bots by reason in its stats, for the last 24 hours and 7 days", async () => {
    const shop = await newShop(srv, account, receiver);
    const other = await newShop(srv, account, receiver);
    await visit(shop, { 'user-agent': GOOGLEBOT });
    await visit(shop, { 'user-agent': HEADLESS });
    await visit(shop, { 'user-agent': CHROME }, '?webdriver=1');
    await visit(other, { 'user-agent': GOOGLEBOT });
    const stats = (org: OrgId) => srv.api.get<BodyOf<'getOrganisationStats'>>(`${orgPath(org)}/stats`, { token: account.token });
    // counts are written in the background, about once a second
    await passesEventually(async () => {
      const r = await stats(shop.org);
      expect(r.status, r.text).to.equal(200);
      expect(r.body.bots_24h).to.deep.equal({ user_agent: 8, webdriver: 4 });
      expect(r.body.bots_7d).to.deep.equal({ user_agent: 8, webdriver: 4 });
      expect(r.body).to.include({ visitors_24h: 0, events_24h: 0, contacts_24h: 0 });
    });
    await passesEventually(async () => expect((await stats(other.org)).body.bots_7d).to.deep.equal({ user_agent: 4, webdriver: 0 }));

    // counts older than 24 hours count in the week only
    const old = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000 - 30 * 3_600_000);
    await srv.deps.db.insertInto('bot_requests').values({ org_id: shop.org, hour: old, reason: 'webdriver', requests: 5 }).execute();
    const r = await stats(shop.org);
    expect(r.body.bots_24h).to.deep.equal({ user_agent: 8, webdriver: 4 });
    expect(r.body.bots_7d).to.deep.equal({ user_agent: 8, webdriver: 9 });
    const fresh = await newShop(srv, account, receiver);
    expect((await stats(fresh.org)).body).to.deep.include({ bots_24h: { user_agent: 0, webdriver: 0 }, bots_7d: { user_agent: 0, webdriver: 0 } });
  });
});
