// The options of `npm run bench` (BENCHMARKS.md "Method" and "Other
// options"), parsed and checked in one place, without side effects, so that
// scripts/bench.ts reads one typed object and the parsing can be tested.
import { parseArgs } from 'node:util';
import { ALIASES, DEFAULT_SCENARIOS, STORED_SCENARIOS } from './bench-scenarios.ts';

export interface MixOptions {
  /** the rated phase runs at this share of the round's own unthrottled maximum (0 < load < 1) */
  load: number;
  /** share of the requests that are page views of visitors who are contacts (each exported to the receiver) */
  exported: number;
  /** share of the requests that identify a new visitor with a new email */
  identify: number;
  /** of the remaining (anonymous) page views, the share from a new visitor; the rest come from known visitors */
  fresh: number;
  /** visitors identified before the rounds, whose page views are exported */
  contacts: number;
}

export interface BenchOptions {
  quick: boolean;
  rounds: number;
  duration: number;
  connections: number;
  scenarios: Set<string>;
  cpuProf: boolean;
  databaseUrl: string | undefined;
  asIs: boolean;
  serviceCmd: string | undefined;
  workers: number | undefined;
  dispatchConcurrency: number | undefined;
  gotMode: 'prepared' | 'plain';
  limitInFlight: number;
  limitBatch: number;
  /** events pre-loaded into a second service's database (0: no stored comparison) */
  stored: number;
  /** stored events per stored visitor */
  storedPerVisitor: number;
  /** requests per WAL measurement (0: none) */
  walEvents: number;
  mix: MixOptions;
  /** the rates scenario's offered rates, as shares of the limit's closed-loop rate (ascending, 0 < s ≤ 1) */
  rates: number[];
}

export class BenchArgsError extends Error {}

function whole(name: string, raw: string | undefined, def: number, min = 1): number {
  if (raw === undefined) return def;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < min) throw new BenchArgsError(`--${name}: "${raw}" is not a whole number ≥ ${min}`);
  return n;
}

/** A percentage flag as a fraction; `open` excludes 0 and 100. */
function percent(name: string, raw: string | undefined, def: number, open = false): number {
  if (raw === undefined) return def / 100;
  const n = Number(raw.replace(/%$/, ''));
  const ok = Number.isFinite(n) && (open ? n > 0 && n < 100 : n >= 0 && n <= 100);
  if (!ok) throw new BenchArgsError(`--${name}: "${raw}" is not a percentage ${open ? 'between 0 and 100 (exclusive)' : 'from 0 to 100'}`);
  return n / 100;
}

/** Parses `npm run bench -- …` (argv without node and the script). */
export function parseBenchArgs(argv: string[], env: NodeJS.ProcessEnv = {}): BenchOptions {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        quick: { type: 'boolean', default: false },
        only: { type: 'string' },
        rounds: { type: 'string' },
        duration: { type: 'string' },
        connections: { type: 'string' },
        preload: { type: 'string' },
        stored: { type: 'string' },
        'stored-per-visitor': { type: 'string' },
        'wal-events': { type: 'string' },
        'mixed-load': { type: 'string' },
        'mixed-export': { type: 'string' },
        'mixed-identify': { type: 'string' },
        'mixed-new': { type: 'string' },
        'mixed-contacts': { type: 'string' },
        rates: { type: 'string' },
        'cpu-prof': { type: 'boolean', default: false },
        'database-url': { type: 'string' },
        'as-is': { type: 'boolean', default: false },
        'service-cmd': { type: 'string' },
        workers: { type: 'string' },
        'dispatch-concurrency': { type: 'string' },
        'got-mode': { type: 'string', default: 'prepared' },
        'limit-in-flight': { type: 'string', default: '2' },
        'limit-batch': { type: 'string', default: '256' },
      },
    }));
  } catch (e) {
    throw new BenchArgsError((e as Error).message);
  }
  if (values.preload !== undefined) {
    throw new BenchArgsError('--preload is replaced by --stored N (a second service on N stored events, measured in the same rounds)');
  }
  const quick = values.quick;
  const rounds = whole('rounds', values.rounds, quick ? 3 : 5);
  if (rounds < 3) throw new BenchArgsError('--rounds: at least 3 (a median of fewer says little)');
  const stored = whole('stored', values.stored, 0, 0);
  const databaseUrl = values['database-url'] ?? env.DATABASE_URL;
  const asIs = values['as-is'];
  if (asIs && !databaseUrl) throw new BenchArgsError('--as-is needs --database-url (or DATABASE_URL)');
  if (stored > 0 && asIs) throw new BenchArgsError('--stored creates and fills a database of its own: not with --as-is');

  const defaults = stored > 0 ? STORED_SCENARIOS : DEFAULT_SCENARIOS;
  const scenarios = new Set((values.only ?? defaults.join(',')).split(',').map((s) => ALIASES[s.trim()] ?? s.trim()));
  const known = new Set([...DEFAULT_SCENARIOS, 'read']);
  for (const k of scenarios) {
    if (!known.has(k)) throw new BenchArgsError(`--only: unknown scenario "${k}" (known: ${[...known].join(', ')})`);
  }
  if (stored > 0) {
    for (const k of ['mixed', 'dispatch', 'rates']) {
      if (scenarios.has(k)) throw new BenchArgsError(`--stored compares ingest and reads; "${k}" runs without it`);
    }
  }

  const mix: MixOptions = {
    load: percent('mixed-load', values['mixed-load'], 50, true),
    exported: percent('mixed-export', values['mixed-export'], 10),
    identify: percent('mixed-identify', values['mixed-identify'], 5),
    fresh: percent('mixed-new', values['mixed-new'], 50),
    contacts: whole('mixed-contacts', values['mixed-contacts'], 1000),
  };
  if (mix.exported + mix.identify > 1) throw new BenchArgsError('--mixed-export and --mixed-identify add up to more than 100 %');

  const rates = (values.rates ?? '10,25').split(',').map((r) => percent('rates', r.trim(), 0, false));
  if (rates.some((r) => r === 0)) throw new BenchArgsError(`--rates: "${values.rates}": each rate is a share above 0 % of the limit's rate`);
  rates.sort((a, b) => a - b);

  const gotMode = values['got-mode'];
  if (gotMode !== 'prepared' && gotMode !== 'plain') throw new BenchArgsError(`--got-mode: "${gotMode}" is neither prepared nor plain`);
  return {
    quick,
    rounds,
    duration: whole('duration', values.duration, quick ? 3 : 10),
    connections: whole('connections', values.connections, 64),
    scenarios,
    cpuProf: values['cpu-prof'],
    databaseUrl,
    asIs,
    serviceCmd: values['service-cmd'],
    workers: values.workers === undefined ? undefined : whole('workers', values.workers, 1),
    dispatchConcurrency: values['dispatch-concurrency'] === undefined ? undefined : whole('dispatch-concurrency', values['dispatch-concurrency'], 1),
    gotMode,
    limitInFlight: whole('limit-in-flight', values['limit-in-flight'], 2),
    limitBatch: whole('limit-batch', values['limit-batch'], 256),
    stored,
    storedPerVisitor: whole('stored-per-visitor', values['stored-per-visitor'], 5),
    walEvents: whole('wal-events', values['wal-events'], quick ? 2_000 : 10_000, 0),
    mix,
    rates,
  };
}
