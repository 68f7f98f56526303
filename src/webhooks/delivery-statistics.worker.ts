// Keeps the planner's picture of `deliveries` from falling far behind the
// table (docs/profiles/mixed-new-organisation-plans.md). The dispatcher's claim
// and outcome statements are prepared, and PostgreSQL caches a generic plan
// for each: built while the table looked empty or small (a new install, or
// autovacuum busy with larger tables for minutes), that plan updates a
// claim's deliveries by walking all of the organisation's, and goes on doing
// so as the table grows, until the next ANALYZE replaces it: up to 786 ms for
// one claim of 200 in the bench's mixed load; with this keeper no claim of
// that load took over 5 ms (migration 2026-11-26T0800 sizes an organisation
// as the whole table once there are statistics).
//
// Autovacuum analyzes a table once a tenth of it changed, when a worker is
// free. This is the backstop where it lags: every CHECK_MS the process that
// runs a dispatcher reads how far `deliveries` moved since its last ANALYZE,
// and runs ANALYZE itself (one process at a time) once the table has changed
// by as many rows as the last ANALYZE counted, and at least MIN_CHANGED. A
// table that grows from empty is analyzed at about 1,000, 2,000, 4,000 …
// rows; one that autovacuum keeps up with never is. ANALYZE reads a sample
// (30,000 rows at the default statistics target), holds no lock that
// writers wait for, and invalidates every process's cached plans of the table.
import type { Deps } from '../deps.ts';
import { analyzeDeliveries, deliveriesMoved } from './delivery-statistics.repository.ts';

/** how often the table's movement is read */
const CHECK_MS = 5_000;
/** changed rows below which the statistics are never refreshed here */
export const MIN_CHANGED = 1_000;

export interface DeliveryStatistics {
  /** Reads the table's movement now and analyzes when it is due; true when this call ran ANALYZE. */
  check(): Promise<boolean>;
  stop(): void;
}

/** Whether the statistics are this far behind: changed by as many rows as they counted, and at least MIN_CHANGED. */
export const analyzeDue = (m: { changed: number; analyzed: number }): boolean => m.changed >= Math.max(MIN_CHANGED, m.analyzed);

export function startDeliveryStatistics(deps: Pick<Deps, 'db' | 'log'>, opts: { checkMs?: number } = {}): DeliveryStatistics {
  let running: Promise<boolean> | undefined;
  let failures = 0;
  async function run(): Promise<boolean> {
    const moved = await deliveriesMoved(deps.db);
    if (!moved || !analyzeDue(moved)) return false;
    const done = await analyzeDeliveries(deps.db);
    if (done) deps.log.info({ changed: moved.changed, analyzed: moved.analyzed }, 'analyzed deliveries: its statistics were behind the table');
    return done;
  }
  function check(): Promise<boolean> {
    running ??= run().finally(() => {
      running = undefined;
    });
    return running;
  }
  const timer = setInterval(() => {
    check().then(
      () => (failures = 0),
      (err: unknown) => {
        // the database is away: the next round tries again
        if (failures++ % 12 === 0) deps.log.warn({ err }, 'reading the deliveries statistics failed; retrying');
      },
    );
  }, opts.checkMs ?? CHECK_MS);
  timer.unref();
  return { check, stop: () => clearInterval(timer) };
}
