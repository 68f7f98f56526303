// Group commit gathers while busy (src/tracking/ingest.service.ts GATHER):
// after a batch of at least half of `gather.items`, a smaller batch waits up
// to `gather.ms` for more, once; reaching `gather.items` ends the wait; a
// quiet ingestor (its last batch small) writes at once. Each ingestor here
// has its own metrics registry: the batches are read off its
// trackway_ingest_batch_size histogram, the items off the events table.
import { expect } from 'chai';
import { createMetrics, type Metrics } from '../../src/http/metrics.ts';
import { createIngestor, GATHER, type Ingestor } from '../../src/tracking/ingest.service.ts';
import { type EventItem, eventItem } from '../../src/tracking/ingest.types.ts';
import { unique, withMerchant } from '../support/accounts.ts';
import { histogramTotals } from '../support/histograms.ts';

describe('tracking: group commit gathers a batch while busy', () => {
  const shop = withMerchant();

  async function ingestor(gather: { items: number; ms: number }): Promise<{ ingest: Ingestor; metrics: Metrics; item(): EventItem }> {
    const { srv, org } = shop;
    const policy = (await srv.deps.organisations.policy(org))!;
    const metrics = createMetrics();
    const ingest = createIngestor({ ...srv.deps, metrics }, { gather });
    const item = () =>
      eventItem(
        { orgId: org, roamingId: 'r', coreId: unique('c'), receivedAt: new Date(), userAgent: null, location: null, policy, gpc: false },
        null,
        'view',
        { page: 'https://x.example/' },
      );
    return { ingest, metrics, item };
  }
  /** the number of batches committed so far and the sum of their sizes */
  const batches = (metrics: Metrics) => histogramTotals(metrics.registry, 'trackway_ingest_batch_size');
  const isStored = async (core: string) =>
    (await shop.srv.deps.db.selectFrom('events').select('core_id').where('org_id', '=', shop.org).where('core_id', '=', core).execute()).length === 1;

  it('gathers by default, for at most a millisecond', () => {
    expect(GATHER.items).to.be.at.least(2);
    expect(GATHER.ms).to.be.within(0.1, 1);
  });

  it('after a full batch, lets the next grow: items submitted 50 ms apart are one batch', async () => {
    const { ingest, metrics, item } = await ingestor({ items: 8, ms: 500 });
    await Promise.all(Array.from({ length: 8 }, () => ingest.submit(item())));
    expect(await batches(metrics)).to.deep.equal({ count: 1, sum: 8 });
    const first = item();
    const done = ingest.submit(first);
    await new Promise((r) => setTimeout(r, 50));
    expect(await isStored(first.coreId)).to.equal(false);
    await Promise.all([done, ingest.submit(item()), ingest.submit(item())]);
    // one batch of 3, not 1 then 2
    expect(await batches(metrics)).to.deep.equal({ count: 2, sum: 11 });
    // the batch of 3 was small: the next item goes at once, in a batch of its own
    await ingest.submit(item());
    expect(await batches(metrics)).to.deep.equal({ count: 3, sum: 12 });
  });

  it('ends the wait when the batch reaches gather.items (the wait is a minute here)', async () => {
    const { ingest, metrics, item } = await ingestor({ items: 8, ms: 60_000 });
    await Promise.all(Array.from({ length: 8 }, () => ingest.submit(item())));
    const first = ingest.submit(item());
    await new Promise((r) => setImmediate(r));
    await Promise.all([first, ...Array.from({ length: 7 }, () => ingest.submit(item()))]);
    expect(await batches(metrics)).to.deep.equal({ count: 2, sum: 16 });
  });

  it('writes at once when quiet (the wait is a minute here), and never waits with items 0', async () => {
    const quiet = await ingestor({ items: 8, ms: 60_000 });
    const lone = quiet.item();
    await quiet.ingest.submit(lone);
    expect(await isStored(lone.coreId)).to.equal(true);
    const off = await ingestor({ items: 0, ms: 60_000 });
    await Promise.all(Array.from({ length: 8 }, () => off.ingest.submit(off.item())));
    await off.ingest.submit(off.item());
    expect(await batches(off.metrics)).to.deep.equal({ count: 2, sum: 9 });
  });
});
