// The fast path admits a request at once when the organisation's policy is
// cached (tryAdmit: no promise, no turn of the microtask queue), and waits
// for the policy otherwise. Both ways decide the same, charge the same and
// make the same item.
import { expect } from 'chai';
import type { OrgId } from '../../src/db/tenancy.ts';
import { NOT_CACHED } from '../../src/platform/organisation-directory.service.ts';
import { type Admission, type TrackingClient, tryAdmit } from '../../src/tracking/tracking.service.ts';
import { unique, withMerchant } from '../support/accounts.ts';

describe('tracking: admission without waiting when the policy is cached', () => {
  const shop = withMerchant();
  const client = (origin = ''): TrackingClient => ({
    ip: '81.2.69.142',
    origin,
    referer: '',
    userAgent: 'Mozilla/5.0 (test)',
    bodyChars: 40,
    gpc: false,
  });
  const ids = (org: OrgId = shop.org) => ({ org_id: org, roaming_id: unique('r'), core_id: unique('c'), corex_id: 'null' });
  const view = (org?: OrgId, origin?: string) =>
    tryAdmit(shop.srv.deps, 'recordViewEvent', client(origin), ids(org), { page: 'https://shop.example/' });

  it('waits for a policy it has not read, then decides at once while it is cached', async () => {
    const directory = shop.srv.deps.organisations;
    directory.invalidate(shop.org);
    expect(directory.cachedPolicy(shop.org)).to.equal(NOT_CACHED);
    const first = view();
    expect(first).to.be.instanceOf(Promise);
    const waited = (await first) as Admission;
    expect(waited.item?.kind).to.equal('event');
    expect(directory.cachedPolicy(shop.org)).to.not.equal(NOT_CACHED);
    const now = view();
    expect(now).to.not.be.instanceOf(Promise);
    const a = now as Admission;
    expect(a.item?.kind).to.equal('event');
    expect(a.policy).to.equal(waited.policy);
    // the same item, field for field, but for the request's own ids and instant
    const strip = (x: Admission) => ({ ...x.item, coreId: '', roamingId: '', receivedAt: null });
    expect(strip(a)).to.deep.equal(strip(waited));
    // invalidated (a change to the organisation): read again
    directory.invalidate(shop.org);
    expect(view()).to.be.instanceOf(Promise);
  });

  it('refuses at once what a cached answer refuses: an organisation that does not exist', async () => {
    const directory = shop.srv.deps.organisations;
    const unknown = 987_654_321 as OrgId;
    expect(await view(unknown)).to.equal(null);
    expect(directory.cachedPolicy(unknown)).to.equal(undefined);
    const again = view(unknown);
    expect(again, 'decided at once from the cached answer "no such organisation"').to.equal(null);
  });
});
