// The bounded memos of src/recent-cache.ts: RecentCache (two generations) and
// evictOldest, with which the bounded Maps (fresh visitors, webhook
// credentials) forget their oldest entries a batch at a time.
import { expect } from 'chai';
import { FreshVisitors } from '../../src/identity/fresh-visitors.service.ts';
import type { VisitorTouch } from '../../src/identity/visitors-upsert.repository.ts';
import { evictionBatch, evictOldest, RecentCache } from '../../src/recent-cache.ts';
import { testOrgId } from '../support/org-id.ts';

describe('foundation: bounded memos', () => {
  it('evictOldest deletes the oldest entries, in insertion order, and no more than asked', () => {
    const m = new Map<string, number>();
    for (let i = 0; i < 10; i++) m.set(`k${i}`, i);
    m.delete('k1');
    m.set('k1', 1); // written again: now the newest
    evictOldest(m, 3);
    expect([...m.keys()]).to.deep.equal(['k4', 'k5', 'k6', 'k7', 'k8', 'k9', 'k1']);
    evictOldest(m, 0);
    expect(m.size).to.equal(7);
    evictOldest(m, 100);
    expect(m.size).to.equal(0);
  });

  it('an eighth of the bound at a time, at least one', () => {
    expect([evictionBatch(10_000), evictionBatch(8), evictionBatch(2), evictionBatch(1)]).to.deep.equal([1_250, 1, 1, 1]);
  });

  it('fresh visitors stay within their bound and forget the oldest written first', () => {
    const max = 800;
    const fresh = new FreshVisitors(max);
    const touch = (i: number): VisitorTouch => {
      const at = new Date('2026-11-27T10:00:00Z');
      return { orgId: testOrgId(7), coreId: `c${i}`, roamingId: 'r', corexId: null, firstSeen: at, lastSeen: at, userAgent: 'UA/1', location: null };
    };
    let largest = 0;
    for (let i = 0; i < 5 * max; i++) {
      const t = touch(i);
      fresh.wrote([t], [{ org_id: t.orgId, core_id: t.coreId }]);
      largest = Math.max(largest, fresh.size);
    }
    expect(largest, 'never more than the bound').to.equal(max);
    expect(fresh.size, 'at least all but one batch').to.be.at.least(max - evictionBatch(max));
    // the newest are remembered, the oldest forgotten
    expect(fresh.unchanged(touch(5 * max - 1))).to.equal(true);
    expect(fresh.unchanged(touch(5 * max - fresh.size))).to.equal(true);
    expect(fresh.unchanged(touch(5 * max - fresh.size - 1))).to.equal(false);
    expect(fresh.unchanged(touch(0))).to.equal(false);
  });

  it('RecentCache keeps the young generation and what was read from the old one', () => {
    const c = new RecentCache<number>(2);
    c.set('a', 1);
    c.set('b', 2);
    c.set('c', 3); // a and b become the old generation
    expect(c.get('a')).to.equal(1); // read: young again
    c.set('d', 4); // young (c, a) full: it becomes the old one, b is gone
    expect([c.get('a'), c.get('b'), c.get('c'), c.get('d')]).to.deep.equal([1, undefined, 3, 4]);
  });
});
