// The rates scenario's reading of the service's histograms from /metrics
// (scripts/bench-histogram.ts): label sets summed, the difference between
// two readings, and quantiles to the resolution of the buckets.
import { expect } from 'chai';
import { bucketQuantile, histogramDelta, readHistogram } from '../../scripts/bench-histogram.ts';

const text = (n: [number, number, number, number], sum: number) =>
  [
    '# HELP trackway_ingest_commit_seconds time to write and commit one ingest batch',
    '# TYPE trackway_ingest_commit_seconds histogram',
    `trackway_ingest_commit_seconds_bucket{le="0.001",worker="1"} ${n[0]}`,
    `trackway_ingest_commit_seconds_bucket{le="0.01",worker="1"} ${n[1]}`,
    `trackway_ingest_commit_seconds_bucket{le="+Inf",worker="1"} ${n[2]}`,
    `trackway_ingest_commit_seconds_sum{worker="1"} ${sum}`,
    `trackway_ingest_commit_seconds_count{worker="1"} ${n[2]}`,
    `trackway_ingest_commit_seconds_bucket{worker="2",le="0.001"} 1`,
    `trackway_ingest_commit_seconds_bucket{worker="2",le="0.01"} 1`,
    `trackway_ingest_commit_seconds_bucket{worker="2",le="+Inf"} 1`,
    'trackway_ingest_commit_seconds_sum{worker="2"} 0.0005',
    'trackway_ingest_commit_seconds_count{worker="2"} 1',
    `trackway_ingest_commit_seconds_other_bucket{le="0.001"} ${n[3]}`,
    'trackway_ingest_batch_size_count 7',
  ].join('\n');

describe('bench histograms from /metrics', () => {
  it('adds up the label sets of one histogram and nothing else', () => {
    const h = readHistogram(text([2, 5, 6, 99], 0.03), 'trackway_ingest_commit_seconds');
    expect([...h.buckets]).to.deep.equal([
      [0.001, 3],
      [0.01, 6],
      [Infinity, 7],
    ]);
    expect(h.count).to.equal(7);
    expect(h.sum).to.be.closeTo(0.0305, 1e-9);
    expect(readHistogram(text([2, 5, 6, 99], 0.03), 'absent_seconds')).to.deep.equal({ buckets: new Map(), sum: 0, count: 0 });
  });

  it('gives what was observed between two readings, and its quantiles as bucket bounds', () => {
    const before = readHistogram(text([2, 5, 6, 0], 0.03), 'trackway_ingest_commit_seconds');
    const after = readHistogram(text([12, 104, 106, 0], 0.53), 'trackway_ingest_commit_seconds');
    const d = histogramDelta(before, after);
    expect(d.count).to.equal(100);
    expect(d.sum).to.be.closeTo(0.5, 1e-9);
    expect(bucketQuantile(d, 0.1)).to.equal(0.001);
    expect(bucketQuantile(d, 0.5)).to.equal(0.01);
    expect(bucketQuantile(d, 0.99)).to.equal(0.01);
    expect(bucketQuantile(d, 1)).to.equal(Infinity);
    expect(bucketQuantile(histogramDelta(after, after), 0.5)).to.equal(null);
  });
});
