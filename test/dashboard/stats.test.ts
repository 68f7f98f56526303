// getOrganisationStats: visitors, contacts and events over rolling 24 h and
// 7 day windows, events per UTC hour, tenant-checked. Data goes in through
// the tracking API; other "now"s are read through the service on the same
// database (the windows end at `now`).
import { expect } from 'chai';
import { organisationStats } from '../../src/tracking/stats.service.ts';
import { type Account, newAccount, newMerchant, unique } from '../support/accounts.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { b64url } from '../support/payload.ts';
import type { OrgId } from '../../src/db/tenancy.ts';
import type { BodyOf, PlatformError } from '../support/client.ts';

const HOUR = 3_600_000;

describe('organisation statistics (getOrganisationStats)', () => {
  let srv: TestServer;
  let account: Account;
  before(async () => {
    srv = await startTestServer();
    account = await newAccount(srv);
  });
  after(() => srv.stop());

  const statsPath = (orgId: number, platform = account.platform) => `/v1/rest/${platform}/organisations/${orgId}/stats`;

  async function track(orgId: number, core: string, name: string, body: Record<string, unknown>) {
    const r = await srv.api.post(`/jsv1/${orgId}/${unique('r')}/${core}/null/event/${name}`, body);
    expect(r.status, r.text).to.equal(202);
  }

  async function identify(orgId: OrgId, core: string, payload: Record<string, string>) {
    const r = await srv.api.get(`/jsv1/identify/${orgId}/${unique('r')}/${core}/${b64url(payload)}`);
    expect(r.status, r.text).to.equal(200);
  }

  /** Two visitors, four events, one contact linked to both visitors and one to the first only. */
  async function busyShop(): Promise<OrgId> {
    const org = (await newMerchant(srv, account)).organisation.id;
    const [a, b] = [unique('ca'), unique('cb')];
    await track(org, a, 'view', { page: 'https://s.example/' });
    await track(org, a, 'productview', { product_id: 1, price: 9.5, product_url: 'https://s.example/p/1' });
    await track(org, b, 'view', { page: 'https://s.example/sale' });
    await track(org, b, 'categoryview', { category: 'shirts' });
    await identify(org, a, { email: 'Jane@Example.com' });
    await identify(org, b, { email: 'jane@example.com' });
    await identify(org, a, { phone: '+44 20 7946 0958' });
    return org;
  }

  it('answers zeros and 24 empty hours for a new organisation, the current hour last', async () => {
    const org = (await newMerchant(srv, account)).organisation.id;
    const before = Date.now();
    const r = await srv.api.get<BodyOf<'getOrganisationStats'>>(statsPath(org), { token: account.token });
    expect(r.status, r.text).to.equal(200);
    expect(r.body).to.include({ visitors_24h: 0, visitors_7d: 0, contacts_24h: 0, contacts_7d: 0, events_24h: 0, events_7d: 0 });
    const hours = r.body.events_per_hour as { hour: string; count: number }[];
    expect(hours).to.have.length(24);
    expect(hours.every((h) => h.count === 0)).to.equal(true);
    const last = Date.parse(hours[23]!.hour);
    expect(last % HOUR).to.equal(0);
    expect(last).to.be.oneOf([Math.floor(before / HOUR) * HOUR, Math.floor(Date.now() / HOUR) * HOUR]);
    hours.forEach((h, i) => expect(Date.parse(h.hour)).to.equal(last - (23 - i) * HOUR));
  });

  it('counts distinct visitors, distinct linked contacts and events of the organisation', async () => {
    const org = await busyShop();
    await busyShop(); // another organisation's activity is not counted
    const r = await srv.api.get<BodyOf<'getOrganisationStats'>>(statsPath(org), { token: account.token });
    expect(r.status, r.text).to.equal(200);
    expect(r.body).to.include({ visitors_24h: 2, visitors_7d: 2, contacts_24h: 2, contacts_7d: 2, events_24h: 4, events_7d: 4 });
    const hours = r.body.events_per_hour as { hour: string; count: number }[];
    expect(hours.reduce((n, h) => n + h.count, 0)).to.equal(4);
    // the events were just recorded: in the current hour, or the one before if the hour turned meanwhile
    expect(hours[23]!.count + hours[22]!.count).to.equal(4);
  });

  it('moves activity out of the 24 hour window, then out of the 7 day one, as time passes', async () => {
    const org = await busyShop();
    const principal = { userId: account.userId, platform: account.platform };
    const later = await organisationStats(srv.deps, principal, org, new Date(Date.now() + 2 * 24 * HOUR));
    expect(later).to.include({ visitors_24h: 0, visitors_7d: 2, contacts_24h: 0, contacts_7d: 2, events_24h: 0, events_7d: 4 });
    expect(later.events_per_hour.every((h) => h.count === 0)).to.equal(true);

    const muchLater = await organisationStats(srv.deps, principal, org, new Date(Date.now() + 8 * 24 * HOUR));
    expect(muchLater).to.include({ visitors_24h: 0, visitors_7d: 0, contacts_24h: 0, contacts_7d: 0, events_24h: 0, events_7d: 0 });

    // 10 hours on, the events sit 10 (or 11, across an hour boundary) buckets before the last
    const tenHours = await organisationStats(srv.deps, principal, org, new Date(Date.now() + 10 * HOUR));
    expect(tenHours.events_24h).to.equal(4);
    const counts = tenHours.events_per_hour.map((h) => h.count);
    expect(counts[13]! + counts[12]!).to.equal(4);
  });

  it('answers 403 for an organisation of another account, 401 without a token', async () => {
    const org = await busyShop();
    const stranger = await newAccount(srv, 'otherplatform');
    const foreign = await srv.api.get<PlatformError>(statsPath(org, stranger.platform), { token: stranger.token });
    expect(foreign.status).to.equal(403);
    expect(foreign.body.code).to.equal(4030);
    const missing = await srv.api.get(statsPath(987654321), { token: account.token });
    expect(missing.status).to.equal(403);
    const anonymous = await srv.api.get<PlatformError>(statsPath(org));
    expect(anonymous.status).to.equal(401);
    expect(anonymous.body.code).to.equal(4010);
  });
});
