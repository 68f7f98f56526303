// Failed logins are counted per (email, address) and per address
// (src/platform/login-failures.repository.ts). A burst of parallel guesses
// for one email from one address must be counted in the same order on both
// keys: with the address's limit above the email's, exactly the email's limit
// of guesses gets through. Counted in two independent statements, a guess
// could be third for the email but sixth for the address (the others counted
// there while it waited) and be refused with only two guesses made: 37 of 200
// bursts before the fix, and a flaky parallel-burst test in
// test/platform/rate-limit.test.ts.
import { expect } from 'chai';
import { countAttempt } from '../../src/platform/login-failures.repository.ts';
import { type TestDatabase, freshDatabase } from '../support/harness.ts';

describe('login failures: a parallel burst counted in one order on both keys', () => {
  let db: TestDatabase;
  before(async () => {
    db = await freshDatabase();
  });
  after(async () => db.drop());

  it('lets exactly the email limit (3) of 8 parallel guesses through when the address limit is 5, burst after burst', async () => {
    const admitted: number[] = [];
    for (let burst = 0; burst < 50; burst++) {
      const keys = [
        { key: `email-ip:e${burst}@shop.example|192.0.2.${burst}`, windowMs: 60_000 },
        { key: `ip:192.0.2.${burst}`, windowMs: 60_000 },
      ];
      const counts = await Promise.all(Array.from({ length: 8 }, () => countAttempt(db.handle.db, keys)));
      // every guess counted on both keys, each count once
      expect(counts.map(([e]) => e!.failures).sort((a, b) => a - b)).to.deep.equal([1, 2, 3, 4, 5, 6, 7, 8]);
      expect(counts.map(([, a]) => a!.failures).sort((a, b) => a - b)).to.deep.equal([1, 2, 3, 4, 5, 6, 7, 8]);
      admitted.push(counts.filter(([e, a]) => e!.failures <= 3 && a!.failures <= 5).length);
    }
    expect(admitted.filter((n) => n !== 3)).to.deep.equal([]);
  });
});
