// Issue 12, point 1 with default settings: nothing a browser sends can put a
// URL outside the organisation's allowed domains into a notification or a
// visitor read. The attack is reproduced as reported, end to end (tracking
// API → ingest → outbox → dispatcher → a real receiver), in each of its
// forms: cart_url, product_url through productview, items[].product_url
// through checkout and buy, and a guessed corex_id. Then: the matching rules,
// narrowing allowed_domains later, and enforce_origin.
import { expect } from 'chai';
import { hostAllowed, normaliseAllowedDomain, urlMatcher } from '../../src/identity/url-policy.rules.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { TestReceiver } from '../support/receiver.ts';
import { type Account, newAccount, unique } from '../support/accounts.ts';
import { footprint, newShop, PHISH, type Shop, storedDeliveries } from '../support/trust.ts';
import type { Reply, TrackingError } from '../support/client.ts';

describe('URL policy: allowed domains (on by default)', function () {
  this.timeout(60_000);
  let srv: TestServer;
  let receiver: TestReceiver;
  let account: Account;
  const figures = { deliveries: 0, phishing: 0 };
  before(async () => {
    receiver = await TestReceiver.start(() => ({ status: 204 }));
    srv = await startTestServer({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_RETRY_SCHEDULE: '200ms' }, { dispatcher: true });
    account = await newAccount(srv);
  });
  after(async () => {
    console.log(
      `      url policy figures: ${figures.deliveries} deliveries received in the attack tests, ${figures.phishing} carrying the phishing host`,
    );
    await srv?.stop();
    await receiver?.close();
  });

  /** No delivery that reached the receiver, nor any stored one, carries the phishing host. */
  async function expectNoPhishAnywhere(shop: Shop) {
    await shop.drained();
    const received = shop.received();
    expect(received.length, 'the shop received deliveries').to.be.greaterThan(0);
    figures.deliveries += received.length;
    figures.phishing += received.filter((b) => JSON.stringify(b).includes('phish.attacker.example')).length;
    for (const body of received) expect(JSON.stringify(body)).to.not.include('phish.attacker.example');
    for (const d of await storedDeliveries(srv, shop.orgId)) expect(JSON.stringify(d.body)).to.not.include('phish.attacker.example');
  }

  /** A real customer: views and adds product 1001 to the cart on the shop, then identifies as BUYER@example.com. */
  async function realCustomer(shop: Shop, corex = 'null') {
    const victim = shop.visitor(unique('real'), corex);
    expect((await victim.track('productview', { product_id: 1001, price: 59.9, product_url: shop.url('/products/linen-shirt') })).status).to.equal(
      202,
    );
    expect((await victim.track('updatecart', { product_id: 1001, cart_url: shop.url('/cart'), line_items: [], cart_value: 59.9 })).status).to.equal(
      202,
    );
    expect((await victim.identify({ email: 'BUYER@example.com', name: 'Bo Buyer' })).status).to.equal(200);
    return victim;
  }

  it('reproduces the reported attack (cart_url, then identify as the customer) and the phishing URL reaches no receiver and no profile', async () => {
    const shop = await newShop(srv, account, receiver);
    const victim = await realCustomer(shop);
    // the attack, as reported: no credential, an unknown product, the phishing page as cart_url
    const atk = shop.visitor('atk');
    const r = await srv.api.post(`/jsv1/${shop.orgId}/r-h/atk/null/event/updatecart`, {
      product_id: 424242,
      cart_url: PHISH,
      line_items: [],
      cart_value: 1,
    });
    expect(r.status, r.text).to.equal(202);
    expect((await atk.identify({ email: 'BUYER@example.com' })).status).to.equal(200);

    await expectNoPhishAnywhere(shop);
    const matches = (await storedDeliveries(srv, shop.orgId)).filter((d) => d.kind === 'matched').map((d) => d.body);
    expect(matches.map((b) => b.contact)).to.deep.equal(['buyer@example.com', 'buyer@example.com']); // the customer's, then the attacker's link
    // the attacker's cart counts (it joined the person), but only through in-domain URLs: its product has none
    expect(matches[1]).to.not.have.property('last_addtocart');
    expect(matches[1]!.last_view).to.deep.equal([shop.url('/products/linen-shirt')]);
    const profile = await victim.read();
    expect(JSON.stringify(profile)).to.not.include('phish.attacker.example');
    expect(profile.recent.last_view).to.deep.equal([shop.url('/products/linen-shirt')]);
    // the event itself is stored exactly as sent
    const stored = await srv.deps.db.selectFrom('events').select(['body']).where('org_id', '=', shop.orgId).where('core_id', '=', 'atk').execute();
    expect(stored.map((e) => e.body)).to.deep.equal([{ product_id: 424242, cart_url: PHISH, line_items: [], cart_value: 1 }]);
    expect(await footprint(srv, shop.orgId, 'atk')).to.deep.equal({ visitors: 1, links: 1, events: 1 });
  });

  it('keeps a phishing product_url sent through productview with the customer’s product id out of the catalogue and last_view', async () => {
    const shop = await newShop(srv, account, receiver);
    const victim = await realCustomer(shop);
    const atk = shop.visitor();
    expect((await atk.track('productview', { product_id: 1001, price: 1, product_url: PHISH })).status).to.equal(202);
    expect((await atk.track('updatecart', { product_id: 1001, cart_url: PHISH })).status).to.equal(202);
    expect((await atk.identify({ email: 'buyer@example.com' })).status).to.equal(200);
    // and a later match of the real customer (a new contact) carries the real product only
    expect((await victim.identify({ phone: '+44 20 7946 0958' })).status).to.equal(200);

    await expectNoPhishAnywhere(shop);
    const last = (await storedDeliveries(srv, shop.orgId)).filter((d) => d.kind === 'matched').at(-1)!.body;
    expect(last).to.include({ contact: '+442079460958', last_addtocart: shop.url('/products/linen-shirt') });
    const catalogue = await srv.deps.db.selectFrom('products').select(['product_id', 'url']).where('org_id', '=', shop.orgId).execute();
    expect(catalogue).to.deep.equal([{ product_id: 1001, url: shop.url('/products/linen-shirt') }]);
    expect((await victim.read()).recent).to.deep.equal({
      last_view: [shop.url('/products/linen-shirt')],
      last_addtocart: shop.url('/products/linen-shirt'),
    });
  });

  it('keeps phishing items[].product_url of checkout and buy out of the catalogue', async () => {
    const shop = await newShop(srv, account, receiver);
    const victim = await realCustomer(shop);
    const atk = shop.visitor();
    const items = [{ product_id: 1001, price: 1, product_url: PHISH }];
    expect((await atk.track('checkout', { checkout: PHISH, items, cart_value: 1 })).status).to.equal(202);
    expect((await atk.track('buy', { checkout_url: PHISH, order_id: 'o-1', items })).status).to.equal(202);
    // the customer adds the product again: last_addtocart resolves through the catalogue
    expect((await victim.track('updatecart', { product_id: 1001, cart_url: shop.url('/cart') })).status).to.equal(202);
    expect((await victim.identify({ phone: '+1 555 0100' })).status).to.equal(200);

    await expectNoPhishAnywhere(shop);
    const last = (await storedDeliveries(srv, shop.orgId)).filter((d) => d.kind === 'matched').at(-1)!.body;
    expect(last).to.include({ contact: '+15550100', last_addtocart: shop.url('/products/linen-shirt') });
    expect((await victim.read()).recent.last_addtocart).to.equal(shop.url('/products/linen-shirt'));
  });

  it('joins an attacker who guesses the customer’s corex_id (optional mode), but not the phishing URL it sends', async () => {
    const shop = await newShop(srv, account, receiver);
    const corex = unique('cust-1001');
    const victim = await realCustomer(shop, corex);
    const atk = shop.visitor(unique('atk'), corex);
    expect((await atk.track('updatecart', { product_id: 5150, cart_url: PHISH })).status).to.equal(202);
    expect((await atk.track('productview', { product_id: 1001, price: 1, product_url: PHISH })).status).to.equal(202);
    expect((await victim.identify({ phone: '+1 555 0101' })).status).to.equal(200);

    await expectNoPhishAnywhere(shop);
    // today's stitching (the same person; `required` is what stops it, identity-verification.test.ts)
    expect((await atk.read()).contacts.map((c) => c.value)).to.include('buyer@example.com');
    expect(JSON.stringify(await victim.read())).to.not.include('phish.attacker.example');
  });

  it('allows the shop’s subdomains, any port and case, and refuses look-alike hosts', async () => {
    const shop = await newShop(srv, account, undefined);
    const v = shop.visitor();
    const ok = [`https://WWW.${shop.domain.toUpperCase()}/p/1`, `http://cdn.${shop.domain}:8443/p/2`, `https://${shop.domain}./p/3`];
    const bad = [
      `https://${shop.domain}.evil.example/p/4`,
      `https://evil${shop.domain}/p/5`,
      `https://${shop.domain}@phish.attacker.example/p/6`,
      'http://127.0.0.1/p/7',
    ];
    let id = 1;
    for (const url of [...bad, ...ok]) expect((await v.track('productview', { product_id: id++, product_url: url })).status).to.equal(202);
    // the three allowed ones, most recent first, as sent
    expect((await v.read()).recent.last_view).to.deep.equal([...ok].reverse());
  });

  it('applies a narrower allowed_domains to what was recorded before (reads and notifications), and a wider one to what comes after', async () => {
    const shop = await newShop(srv, account, receiver);
    const www = (path: string) => `https://www.${shop.domain}${path}`;
    const blog = (path: string) => `https://blog.${shop.domain}${path}`;
    const v = shop.visitor();
    await v.track('productview', { product_id: 1, product_url: www('/p/1') });
    await v.track('productview', { product_id: 2, product_url: blog('/p/2') });
    await v.track('updatecart', { product_id: 2, cart_url: www('/cart') });
    expect((await v.read()).recent).to.deep.equal({ last_view: [blog('/p/2'), www('/p/1')], last_addtocart: blog('/p/2') });

    // only the shop's www host now: the blog URL disappears from reads and from the next notification
    const narrowed = await shop.settings({ allowed_domains: [`WWW.${shop.domain}.`, `www.${shop.domain}`] });
    expect(narrowed.status, narrowed.text).to.equal(200);
    expect(narrowed.body.allowed_domains).to.deep.equal([`www.${shop.domain}`]);
    expect((await v.read()).recent).to.deep.equal({ last_view: [www('/p/1')], last_addtocart: www('/cart') });
    expect((await v.identify({ email: 'narrow@example.com' })).status).to.equal(200);
    await shop.drained();
    const match = shop.received().find((b) => b.medium === 'matched')!;
    expect(match).to.include({ last_addtocart: www('/cart') });
    expect(match.last_view).to.deep.equal([www('/p/1')]);

    // a partner domain added: its URLs count from now on; null goes back to the default (the shop's domain)
    const partner = `${unique('partner')}.example`;
    expect((await shop.settings({ allowed_domains: [`www.${shop.domain}`, partner] })).status).to.equal(200);
    await v.track('productview', { product_id: 3, product_url: `https://${partner}/p/3` });
    expect((await v.read()).recent.last_view).to.deep.equal([`https://${partner}/p/3`, www('/p/1')]);
    const reset = await shop.settings({ allowed_domains: null });
    expect(reset.body.allowed_domains).to.deep.equal([shop.domain]);
    expect((await v.read()).recent.last_view).to.deep.equal([blog('/p/2'), www('/p/1')]);
  });

  describe('matching rules', () => {
    it('matches the host (lower-case, trailing dot dropped, port ignored) or a subdomain; IP literals only exactly', () => {
      const allows = urlMatcher(['shop.example.com', '127.0.0.1', '[::1]']);
      const yes = [
        'https://shop.example.com/x',
        'https://SHOP.Example.com./x',
        'https://a.b.shop.example.com:8443/x',
        'http://127.0.0.1:5555/p',
        'http://[::1]:80/',
      ];
      const no = [
        'https://evilshop.example.com/',
        'https://shop.example.com.evil.example/',
        'https://shop.example.com@phish.attacker.example/',
        'https://phish.attacker.example/?u=https://shop.example.com/',
        'http://127.0.0.1.nip.io/',
        'http://127.0.0.2/',
        'javascript:alert(1)//shop.example.com',
        'ftp://shop.example.com/',
        'data:text/html,shop.example.com',
        'not a url',
      ];
      for (const u of yes) expect(allows(u), u).to.equal(true);
      for (const u of no) expect(allows(u), u).to.equal(false);
      expect(hostAllowed('1.127.0.0.1', ['127.0.0.1'])).to.equal(false);
    });

    it('normalises entries to host names and says why one is refused', () => {
      expect(normaliseAllowedDomain(' Shop.Example.COM. ')).to.equal('shop.example.com');
      expect(normaliseAllowedDomain('::1')).to.equal('[::1]');
      expect(normaliseAllowedDomain('xn--bcher-kva.example')).to.equal('xn--bcher-kva.example');
      expect(normaliseAllowedDomain('localhost')).to.equal('localhost');
      for (const bad of [
        'https://shop.example.com',
        'shop.example.com/path',
        'shop.example.com:8080',
        'com',
        '*.example.com',
        'bücher.example',
        '1.2.3',
        '010.0.0.1',
        'a..b',
        '-a.example',
        'user@shop.example.com',
        '',
      ]) {
        expect(normaliseAllowedDomain(bad), bad).to.have.property('error');
      }
    });
  });

  describe('enforce_origin', () => {
    let shop: Shop;
    before(async () => {
      shop = await newShop(srv, account, undefined);
      const r = await shop.settings({ enforce_origin: true });
      expect(r.status, r.text).to.equal(200);
      expect(r.body.enforce_origin).to.equal(true);
    });

    it('refuses identify, events and the pixel from a foreign or missing Origin with 403 origin_not_allowed, storing nothing', async () => {
      const v = shop.visitor();
      const foreign = { origin: 'https://phish.attacker.example' };
      const attempts: Reply<TrackingError>[] = [
        await v.track('updatecart', { product_id: 1, cart_url: PHISH }, foreign),
        await v.track('view', { page: shop.url('/') }), // neither Origin nor Referer
        await v.track('view', { page: shop.url('/') }, { origin: 'null' }),
        await v.track('view', { page: shop.url('/') }, { referer: 'https://phish.attacker.example/page' }),
        await v.identify({ email: 'buyer@example.com' }, foreign),
        await v.identify({ email: 'buyer@example.com' }),
        await srv.api.get(`/jsv1/${shop.orgId}/${v.roaming}/${v.core}/null/event/view?page=${encodeURIComponent(shop.url('/'))}`, {
          headers: { referer: 'https://phish.attacker.example/' },
        }),
        // a look-alike host and the shop's domain as a subdomain of the attacker's
        await v.track('view', { page: shop.url('/') }, { origin: `https://evil${shop.domain}` }),
        await v.track('view', { page: shop.url('/') }, { origin: `https://${shop.domain}.phish.attacker.example` }),
      ];
      for (const r of attempts) {
        expect(r.status, r.text).to.equal(403);
        expect(r.body.error).to.equal('origin_not_allowed');
        expect(r.headers.get('access-control-allow-origin')).to.equal('*');
      }
      expect(await footprint(srv, shop.orgId, v.core)).to.deep.equal({ visitors: 0, links: 0, events: 0 });
    });

    it('accepts the shop’s own origin and its subdomains (Origin, else the Referer’s host)', async () => {
      const v = shop.visitor();
      expect((await v.track('view', { page: shop.url('/') }, { origin: shop.url('') })).status).to.equal(202);
      expect((await v.track('view', { page: shop.url('/') }, { origin: `https://www.${shop.domain}:8443` })).status).to.equal(202);
      expect((await v.track('view', { page: shop.url('/') }, { referer: shop.url('/products/x') })).status).to.equal(202);
      expect((await v.identify({ email: 'origin@example.com' }, { origin: shop.url('') })).status).to.equal(200);
      const pixel = await srv.api.get(`/jsv1/${shop.orgId}/${v.roaming}/${v.core}/null/event/view`, { headers: { referer: shop.url('/no-js') } });
      expect(pixel.status).to.equal(200);
      expect(await footprint(srv, shop.orgId, v.core)).to.deep.equal({ visitors: 1, links: 1, events: 4 });
    });

    it('leaves CORS preflights and the tracker script alone, and other organisations unaffected', async () => {
      const v = shop.visitor();
      const pre = await fetch(`${srv.url}/jsv1/${shop.orgId}/${v.roaming}/${v.core}/null/event/view`, {
        method: 'OPTIONS',
        headers: { origin: 'https://phish.attacker.example', 'access-control-request-method': 'POST' },
      });
      expect(pre.status).to.equal(204);
      const script = await srv.api.get('/jsv1/tracker.js', { headers: { origin: 'https://phish.attacker.example' } });
      expect(script.status).to.equal(200);
      const open = await newShop(srv, account, undefined);
      expect((await open.visitor().track('view', { page: open.url('/') }, { origin: 'https://anywhere.example' })).status).to.equal(202);
    });

    it('takes effect at once when turned off again', async () => {
      const off = await shop.settings({ enforce_origin: false });
      expect(off.body.enforce_origin).to.equal(false);
      expect((await shop.visitor().track('view', { page: shop.url('/') })).status).to.equal(202);
      expect((await shop.settings({ enforce_origin: true })).status).to.equal(200);
      expect((await shop.visitor().track('view', { page: shop.url('/') })).status).to.equal(403);
    });
  });
});
