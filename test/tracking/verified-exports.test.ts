// Exports say what is verified (issue 22, point 2). The attack as reported:
// under identity_verification `optional`, an anonymous visitor identifies as
// a customer's email (no hash) and sends a cart whose line titles, ids,
// order id and category carry the attacker's text; that activity reached the
// customer's `event` exports as free text, and nothing told the receiver it
// was not the customer's. Now every export carries `verified` (the contact's
// link to the event's visitor), and `export_unverified: false` keeps the
// unverified ones out altogether. Real server, dispatcher and receiver.
import { createHmac } from 'node:crypto';
import { expect } from 'chai';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { TestReceiver } from '../support/receiver.ts';
import { type Account, newAccount } from '../support/accounts.ts';
import { PHISH, type Shop, newShop, storedDeliveries } from '../support/trust.ts';

const hashOf = (secret: string, value: string) => createHmac('sha256', secret).update(value.trim().toLowerCase()).digest('hex');
const LURE = `Your cart expires: ${PHISH}`;

describe('exports say what is verified (issue 22, point 2)', function () {
  this.timeout(60_000);
  let srv: TestServer;
  let account: Account;
  let receiver: TestReceiver;

  before(async () => {
    srv = await startTestServer({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' }, { dispatcher: true });
    account = await newAccount(srv);
    receiver = await TestReceiver.start(() => ({ status: 204 }));
  });
  after(async () => {
    await receiver.close();
    await srv.stop();
  });

  /** The customer signs in on the shop (a valid hash), then the attacker claims the same email from another browser (none). */
  async function scene(shop: Shop) {
    const { identity_secret: secret } = await shop.read();
    const email = 'jane.customer@example.com';
    const customer = shop.visitor();
    expect((await customer.identify({ email, hash: hashOf(secret, email) })).status).to.equal(200);
    const attacker = shop.visitor();
    expect((await attacker.identify({ email })).status).to.equal(200);
    return { email, customer, attacker };
  }

  const lureCart = (shop: Shop) => ({
    cart_url: shop.url('/cart'),
    product_id: 7,
    line_items: [{ quantity: 1, title: LURE, line_price: 1, id: LURE, product_id: 7 }],
    cart_value: 1,
  });

  it('marks the attacker’s exports to the customer verified: false and the customer’s own verified: true (export_unverified true, the default)', async () => {
    const shop = await newShop(srv, account, receiver);
    expect((await shop.read()).export_unverified, 'the default').to.equal(true);
    const { email, customer, attacker } = await scene(shop);
    expect((await attacker.track('updatecart', lureCart(shop))).status).to.equal(202);
    expect((await attacker.track('buy', { order_id: LURE, checkout_url: shop.url('/checkout') })).status).to.equal(202);
    expect((await attacker.track('categoryview', { category: LURE })).status).to.equal(202);
    expect((await customer.track('productview', { product_id: 7, price: 1, product_url: shop.url('/p/7') })).status).to.equal(202);
    await shop.drained();

    const exports = shop.received().filter((b) => b.medium === 'event' && b.contact === email);
    const fromAttacker = exports.filter((b) => (b.visitor as { core_id: string }).core_id === attacker.core);
    const fromCustomer = exports.filter((b) => (b.visitor as { core_id: string }).core_id === customer.core);
    expect(fromAttacker.map((b) => b.source_event).sort()).to.deep.equal(['buy', 'categoryview', 'updatecart']);
    expect(fromAttacker.map((b) => b.verified)).to.deep.equal([false, false, false]);
    // the lure is there, as the browser sent it, but the receiver can tell it from the customer's own activity
    expect(JSON.stringify(fromAttacker)).to.include(LURE);
    expect(fromCustomer.map((b) => [b.source_event, b.verified])).to.deep.equal([['productview', true]]);
    // and the contact matches say the same
    const matches = shop.received().filter((b) => b.medium === 'matched' && b.contact === email);
    expect(matches.map((m) => [(m.visitor as { core_id: string }).core_id, m.verified])).to.have.deep.members([
      [customer.core, true],
      [attacker.core, false],
    ]);
  });

  it('keeps unverified activity out of exports altogether with export_unverified: false, and reads the setting back', async () => {
    const shop = await newShop(srv, account, receiver);
    const r = await shop.settings({ export_unverified: false });
    expect(r.status, r.text).to.equal(200);
    expect(r.body.export_unverified).to.equal(false);
    expect((await shop.read()).export_unverified).to.equal(false);
    const { email, customer, attacker } = await scene(shop);
    expect((await attacker.track('updatecart', lureCart(shop))).status).to.equal(202);
    expect((await attacker.track('buy', { order_id: LURE, checkout_url: shop.url('/checkout') })).status).to.equal(202);
    expect((await customer.track('productview', { product_id: 7, price: 1, product_url: shop.url('/p/7') })).status).to.equal(202);
    await shop.drained();

    // nothing of the attacker's reached a delivery, stored or sent; the customer's own export did
    const stored = await storedDeliveries(srv, shop.orgId);
    expect(JSON.stringify(stored)).not.to.include(LURE);
    const exports = stored.filter((d) => d.kind === 'event').map((d) => d.body);
    expect(exports.map((b) => [(b.visitor as { core_id: string }).core_id, b.contact, b.source_event, b.verified])).to.deep.equal([
      [customer.core, email, 'productview', true],
    ]);
    expect(shop.received().filter((b) => b.medium === 'event')).to.have.length(1);
    // the events themselves are stored as before (listEvents shows them to the merchant)
    const events = await srv.deps.db
      .selectFrom('events')
      .select('name')
      .where('org_id', '=', shop.orgId)
      .where('core_id', '=', attacker.core)
      .execute();
    expect(events.map((e) => e.name).sort()).to.deep.equal(['buy', 'updatecart']);

    // back to the default: the attacker's next event is exported again, marked unverified
    expect((await shop.settings({ export_unverified: true })).status).to.equal(200);
    expect((await attacker.track('categoryview', { category: 'shoes' })).status).to.equal(202);
    await shop.drained();
    const last = shop.received().filter((b) => b.medium === 'event' && b.source_event === 'categoryview');
    expect(last.map((b) => [b.contact, b.verified])).to.deep.equal([[email, false]]);
  });

  it('refuses a setting that is not a boolean, in the platform’s error shape', async () => {
    const shop = await newShop(srv, account, undefined);
    for (const value of ['false', 0, null, {}]) {
      const r = await shop.settings({ export_unverified: value });
      expect(r.status, r.text).to.equal(400);
      expect(r.body).to.include({ code: 4000 });
    }
    expect((await shop.read()).export_unverified).to.equal(true);
  });
});
