// `npm run bench -- --stored N`: is ingest flat from an empty database to N
// stored events? Two services run side by side on the same PostgreSQL, each
// on a database of its own: the usual one, and a second one into which N
// events (and their visitors, persons and contacts) are loaded first
// (scripts/bench-stored-load.ts). Every scenario then runs in rounds
// alternating bare → limit → service on the empty database → service on the
// stored one, so both are measured under the same conditions; the figure is
// stored/empty per round and of the medians (target: within 10 %), beside
// each one's ratio to the limit, and WAL bytes per request on both.
import type { ScenarioResult, RoundsConfig, Scenario } from './bench-rounds.ts';
import { compareServices, ratio } from './bench-rounds.ts';
import type { Server } from './bench-servers.ts';
import { type StoredFacts, loadStored } from './bench-stored-load.ts';
import { type WalProbe, type WalShot, scenarioWal } from './bench-wal.ts';

export interface StoredSide {
  server: Server;
  databaseUrl: string;
  org: number;
  scenarios: Map<string, Scenario>;
  /** on this side's database */
  wal: WalProbe | undefined;
}

export interface StoredInput {
  refs: { bare: Server; limit: Server };
  empty: StoredSide;
  stored: StoredSide;
  events: number;
  perVisitor: number;
  keys: string[];
  cfg: RoundsConfig;
  walEvents: number;
}

export interface StoredResult {
  facts: StoredFacts;
  results: ScenarioResult[];
  wal: WalShot[];
}

export const storedLabel = (n: number): string => `+${n.toLocaleString('en-US')} stored`;
export const EMPTY_LABEL = '+0 stored';

export async function benchStored(input: StoredInput): Promise<StoredResult> {
  const { cfg, events } = input;
  cfg.log(
    `\n== loading ${events.toLocaleString('en-US')} stored events into ${new URL(input.stored.databaseUrl).pathname.slice(1)} (organisation ${input.stored.org})`,
  );
  const facts = await loadStored(input.stored.databaseUrl, input.stored.org, events, input.perVisitor, cfg.log);
  const label = storedLabel(events);
  const results: ScenarioResult[] = [];
  const wal: WalShot[] = [];
  for (const key of input.keys) {
    const a = input.empty.scenarios.get(key)!;
    const b = input.stored.scenarios.get(key)!;
    const [empty, stored] = (await compareServices(
      input.refs,
      [
        { label: EMPTY_LABEL, server: input.empty.server, scenario: a },
        { label, server: input.stored.server, scenario: b },
      ],
      cfg,
    )) as [ScenarioResult, ScenarioResult];
    const perRound = stored.per_round.map((r, i) => ratio(r.service.rps, empty.per_round[i]!.service.rps));
    stored.stored_to_empty = ratio(stored.service.rps, empty.service.rps);
    stored.stored_to_empty_per_round = perRound;
    cfg.log(`   ${key}: ${label} / ${EMPTY_LABEL} = ${stored.stored_to_empty} (rounds ${perRound.join(', ')})`);
    results.push(empty, stored);
    if (input.empty.wal && input.walEvents > 0 && a.limit) {
      wal.push(
        ...(await scenarioWal(
          input.empty.wal,
          key,
          [
            { label: 'limit', server: input.refs.limit, make: a.make },
            { label: `service [${EMPTY_LABEL}]`, server: input.empty.server, make: a.make },
            { label: `service [${label}]`, server: input.stored.server, make: b.make, probe: input.stored.wal },
          ],
          input.walEvents,
          cfg,
        )),
      );
    }
  }
  return { facts, results, wal };
}
