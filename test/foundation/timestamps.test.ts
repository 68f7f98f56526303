// isoTimestamp (src/db/timestamps.ts) writes what JSON.stringify writes for a
// Date, remembering the last millisecond it formatted.
import { expect } from 'chai';
import { isoTimestamp, isoTimestampOrNull } from '../../src/db/timestamps.ts';

describe('db: timestamps in JSON parameters', () => {
  it('gives what JSON.stringify gives for a Date, repeated, alternating and at the edges', () => {
    const now = Date.now();
    const instants = [now, now, now + 1, now, 0, -1, -62198755200000, 253402300799999, 8.64e15, -8.64e15, now + 0.5, now];
    for (const ms of instants) {
      const d = new Date(ms);
      expect(JSON.stringify({ at: isoTimestamp(d) }), String(ms)).to.equal(JSON.stringify({ at: d }));
    }
  });

  it('gives null for an invalid date or none, as JSON.stringify does, and forgets nothing it should not', () => {
    const d = new Date(Date.now());
    expect(isoTimestamp(d)).to.equal(d.toISOString());
    expect(isoTimestamp(new Date(Number.NaN))).to.equal(null);
    expect(JSON.stringify({ at: isoTimestamp(new Date(Number.NaN)) })).to.equal(JSON.stringify({ at: new Date(Number.NaN) }));
    expect(isoTimestamp(d)).to.equal(d.toISOString());
    expect(isoTimestampOrNull(null)).to.equal(null);
    expect(isoTimestampOrNull(undefined)).to.equal(null);
    expect(isoTimestampOrNull(d)).to.equal(d.toISOString());
  });
});
