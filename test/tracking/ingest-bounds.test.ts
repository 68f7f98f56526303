// The ingest queue is bounded (src/tracking/ingest.service.ts maxQueued): beyond it a
// submission is refused at once with the tracking API's 503 + Retry-After,
// instead of holding more memory; what was queued is still committed.
import { expect } from 'chai';
import { ApiError } from '../../src/http/errors.ts';
import { createMetrics } from '../../src/http/metrics.ts';
import { createIngestor, MAX_QUEUED } from '../../src/tracking/ingest.service.ts';
import type { EventItem } from '../../src/tracking/ingest.types.ts';
import { unique, withMerchant } from '../support/accounts.ts';

describe('tracking: the ingest queue is bounded', () => {
  const shop = withMerchant();

  it('refuses beyond maxQueued with 503 unavailable and Retry-After, and commits what it queued', async () => {
    const { srv, org } = shop;
    expect(MAX_QUEUED).to.be.at.least(1_000);
    const policy = (await srv.deps.organisations.policy(org))!;
    // its own metrics registry: the server's already holds the ingest metrics
    const ingest = createIngestor({ ...srv.deps, metrics: createMetrics() }, { maxQueued: 2 });
    const item = (): EventItem => ({
      kind: 'event',
      orgId: org,
      roamingId: 'r',
      coreId: unique('c'),
      corexId: null,
      receivedAt: new Date(),
      userAgent: null,
      location: null,
      policy,
      name: 'view',
      body: { page: 'https://x.example/' },
    });
    const [a, b, c] = [item(), item(), item()];
    const results = await Promise.allSettled([ingest.submit(a), ingest.submit(b), ingest.submit(c)]);
    expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'fulfilled', 'rejected']);
    const err = (results[2] as PromiseRejectedResult).reason as ApiError;
    expect(err).to.be.instanceOf(ApiError);
    expect(err.status).to.equal(503);
    expect(err.body.error).to.equal('unavailable');
    expect(err.headers['Retry-After']).to.equal('1');
    const stored = await srv.deps.db.selectFrom('events').select('core_id').where('org_id', '=', org).execute();
    expect(stored.map((r) => r.core_id)).to.have.members([a.coreId, b.coreId]);
    // once the queue has room again, submissions are taken
    await ingest.submit(item());
  });
});
