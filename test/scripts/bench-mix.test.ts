// The mixed scenario's request mix (scripts/bench-mix.ts): each kind at its
// share over any stretch of requests, and requests of the right shape.
import { expect } from 'chai';
import { type MixKind, mixKind, mixedRequests } from '../../scripts/bench-mix.ts';
import { percentile } from '../../scripts/bench-paced.ts';

const count = (from: number, n: number, mix: Parameters<typeof mixKind>[1]) => {
  const c: Record<MixKind, number> = { exported: 0, identify: 0, fresh: 0, returning: 0 };
  for (let i = from; i < from + n; i++) c[mixKind(i, mix)]++;
  return c;
};

describe('bench mixed requests', () => {
  it('holds every share within 0.5 % over any 1,000 requests', () => {
    const mix = { exported: 0.1, identify: 0.05, fresh: 0.5 };
    for (const from of [1, 777, 123_456]) {
      const c = count(from, 1000, mix);
      expect(c.exported).to.be.within(95, 105);
      expect(c.identify).to.be.within(45, 55);
      expect(c.fresh).to.be.within(420, 430);
      expect(c.returning).to.be.within(420, 430);
    }
  });

  it('gives none of a kind whose share is 0, all of one whose share is 100 %', () => {
    expect(count(1, 5000, { exported: 0, identify: 0, fresh: 1 })).to.deep.equal({ exported: 0, identify: 0, fresh: 5000, returning: 0 });
    expect(count(1, 5000, { exported: 1, identify: 0, fresh: 0.5 }).exported).to.equal(5000);
    expect(count(1, 5000, { exported: 0.2, identify: 0.8, fresh: 0.5 })).to.include({ fresh: 0, returning: 0 });
  });

  it('makes exported views by contacts with a marker, identifies and views with tracker-like ids', () => {
    const reqs = mixedRequests(7, 'run1', 'mixed-shop.example', { load: 0.5, exported: 0.1, identify: 0.05, fresh: 0.5, contacts: 3 });
    reqs.setPhase('S2');
    const made = Array.from({ length: 2000 }, () => reqs.make());
    const exported = made.filter((r) => r.tag !== undefined);
    expect(exported.length).to.equal(reqs.counts.exported);
    expect(exported.length).to.be.within(190, 210);
    for (const r of exported) {
      expect(r.method).to.equal('POST');
      expect(r.tag).to.match(/^S2-\d+$/);
      expect(JSON.parse(r.body!).page).to.equal(`https://mixed-shop.example/collections/summer?page=${Number(r.tag!.slice(3)) % 50}&m=${r.tag}`);
    }
    // the exported views come from the 3 contacts only, and those are the visitors the preparation identifies
    const contactCores = new Set(exported.map((r) => r.path.split('/')[4]));
    expect(contactCores.size).to.equal(3);
    const identifyContacts = reqs.contactIdentifies();
    const prepared = new Set(Array.from({ length: 3 }, () => identifyContacts().path.split('/')[5]));
    expect(prepared).to.deep.equal(contactCores);
    const identifies = made.filter((r) => r.method === 'GET');
    expect(identifies.length).to.equal(reqs.counts.identify);
    for (const r of identifies) {
      const [, , , org, roaming, core, payload] = r.path.split('/');
      expect(org).to.equal('7');
      expect(core).to.match(/^[0-9a-f]{32}$/);
      expect(roaming).to.equal(`r${core!.slice(0, 16)}`);
      expect(JSON.parse(Buffer.from(payload!, 'base64url').toString()).email).to.equal(`${core}@mixed.bench.example`);
    }
    for (const r of made) expect(r.path).to.match(/^\/jsv1\/(identify\/)?7\/r[0-9a-f]{16}\/[0-9a-f]{32}\//);
  });

  it('takes percentiles by nearest rank', () => {
    const xs = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(xs, 50)).to.equal(50);
    expect(percentile(xs, 99)).to.equal(99);
    expect(percentile(xs, 100)).to.equal(100);
    expect(percentile([5], 99)).to.equal(5);
    expect(percentile([], 99)).to.equal(0);
  });
});
