// The options of `npm run bench` (scripts/bench-args.ts): defaults, the
// mixed scenario's shares, --stored, and every kind of bad input refused
// with a message that names the flag.
import { expect } from 'chai';
import { BenchArgsError, parseBenchArgs } from '../../scripts/bench-args.ts';
import { DEFAULT_SCENARIOS, STORED_SCENARIOS } from '../../scripts/bench-scenarios.ts';

describe('bench options', () => {
  it('has the documented defaults', () => {
    const o = parseBenchArgs([]);
    expect(o).to.include({ quick: false, rounds: 5, duration: 10, connections: 64, stored: 0, storedPerVisitor: 5, walEvents: 10_000 });
    expect(o).to.include({ gotMode: 'prepared', limitInFlight: 2, limitBatch: 256, asIs: false, cpuProf: false });
    expect([...o.scenarios]).to.deep.equal(DEFAULT_SCENARIOS);
    expect(o.scenarios.has('mixed')).to.equal(true);
    expect(o.mix).to.deep.equal({ load: 0.5, exported: 0.1, identify: 0.05, fresh: 0.5, contacts: 1000 });
    expect(o.rates).to.deep.equal([0.1, 0.25]);
    expect(o.databaseUrl).to.equal(undefined);
  });

  it('reads the rates scenario’s shares as percentages, in ascending order', () => {
    expect(parseBenchArgs(['--rates', '60, 10%,100']).rates).to.deep.equal([0.1, 0.6, 1]);
    expect([...parseBenchArgs(['--only', 'rates']).scenarios]).to.deep.equal(['rates']);
  });

  it('--quick shortens the rounds and the WAL shots', () => {
    expect(parseBenchArgs(['--quick'])).to.include({ rounds: 3, duration: 3, walEvents: 2_000 });
    expect(parseBenchArgs(['--quick', '--rounds', '4', '--wal-events', '0'])).to.include({ rounds: 4, walEvents: 0 });
  });

  it('reads the mixed scenario’s shares as percentages', () => {
    const o = parseBenchArgs([
      '--mixed-load',
      '70',
      '--mixed-export',
      '25%',
      '--mixed-identify',
      '0',
      '--mixed-new',
      '100',
      '--mixed-contacts',
      '50',
    ]);
    expect(o.mix).to.deep.equal({ load: 0.7, exported: 0.25, identify: 0, fresh: 1, contacts: 50 });
  });

  it('--stored N measures view and view-returning unless --only says otherwise', () => {
    const o = parseBenchArgs(['--stored', '10000000']);
    expect(o.stored).to.equal(10_000_000);
    expect([...o.scenarios]).to.deep.equal(STORED_SCENARIOS);
    expect([...parseBenchArgs(['--stored', '1000', '--only', 'updatecart,read']).scenarios]).to.deep.equal(['updatecart', 'read']);
  });

  it('takes ingest as the former name of updatecart and DATABASE_URL from the environment', () => {
    expect([...parseBenchArgs(['--only', 'ingest, identify']).scenarios]).to.deep.equal(['updatecart', 'identify']);
    expect(parseBenchArgs([], { DATABASE_URL: 'postgres://x@127.0.0.1/db' }).databaseUrl).to.equal('postgres://x@127.0.0.1/db');
    expect(parseBenchArgs(['--database-url', 'postgres://y@127.0.0.1/db'], { DATABASE_URL: 'postgres://x@127.0.0.1/db' }).databaseUrl).to.equal(
      'postgres://y@127.0.0.1/db',
    );
  });

  const refused: [string[], RegExp][] = [
    [['--rounds', '2'], /--rounds: at least 3/],
    [['--rounds', '3.5'], /--rounds: "3.5" is not a whole number/],
    [['--duration', '0'], /--duration/],
    [['--connections', 'many'], /--connections/],
    [['--stored', '-5'], /--stored/],
    [['--wal-events', '1e99'], /--wal-events/],
    [['--mixed-load', '0'], /--mixed-load.*exclusive/],
    [['--mixed-load', '100'], /--mixed-load/],
    [['--mixed-export', '101'], /--mixed-export/],
    [['--mixed-export', 'NaN'], /--mixed-export/],
    [['--mixed-export', '60', '--mixed-identify', '50'], /add up to more than 100/],
    [['--only', 'view,bogus'], /unknown scenario "bogus"/],
    [['--stored', '1000', '--only', 'mixed'], /"mixed" runs without it/],
    [['--stored', '1000', '--only', 'view,dispatch'], /"dispatch" runs without it/],
    [['--stored', '1000', '--only', 'rates'], /"rates" runs without it/],
    [['--rates', '0'], /--rates: "0": each rate is a share above 0 %/],
    [['--rates', '25,150'], /--rates: "150" is not a percentage/],
    [['--rates', '25,,50'], /--rates/],
    [['--stored', '1000', '--as-is', '--database-url', 'postgres://x@127.0.0.1/db'], /not with --as-is/],
    [['--as-is'], /--as-is needs --database-url/],
    [['--preload', '1000'], /replaced by --stored/],
    [['--got-mode', 'fast'], /--got-mode/],
    [['--no-such-flag'], /no-such-flag/],
  ];
  for (const [argv, message] of refused) {
    it(`refuses ${argv.join(' ')}`, () => {
      expect(() => parseBenchArgs(argv)).to.throw(BenchArgsError, message);
    });
  }
});
