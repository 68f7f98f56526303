// How many tracking requests were kept out as bots (bots.rules.ts), by reason:
// `trackway_bot_requests_total{reason}` on /metrics (a cluster's workers add
// theirs up, src/cluster/cluster-metrics.ts), and per organisation and UTC
// hour in bot_requests for getOrganisationStats. A bot's request writes
// nothing itself: counts gather in memory and are flushed about once a
// second, one upsert per organisation (bot-counts.repository.ts), so a flood
// of bots costs the database one statement per organisation per second. Counts
// not yet flushed are lost if the process dies (they are statistics); a
// flush that fails is retried with the next one.
import client from 'prom-client';
import type { Database } from '../db/database.ts';
import type { Metrics } from '../http/metrics.ts';
import type { Logger } from '../log.ts';
import { addBotCounts, type BotCountRow, pruneBotCounts } from './bot-counts.repository.ts';
import { BOT_REASONS, type BotReason } from './bots.rules.ts';
import type { Ingestor } from './ingest.service.ts';
import type { OrgId } from '../db/tenancy.ts';

const HOUR = 3_600_000;
/** rows older than this are deleted (the stats read the last 168 hours) */
const KEEP_MS = 8 * 24 * HOUR;

export interface BotTallyOptions {
  /** how long counts wait in memory before they are written (default 1 s) */
  flushMs?: number;
}

/** The process's bot counts waiting to be written: made once, by buildDeps (src/server.ts), and handed to keepBotsOut. */
export class BotTally {
  /** org → `hour|reason` → requests not yet written */
  private pending = new Map<OrgId, Map<string, number>>();
  /** org → the hour its old rows were last pruned in */
  private readonly pruned = new Map<OrgId, number>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  private readonly counter: client.Counter<'reason'>;
  private readonly flushMs: number;

  constructor(
    private readonly db: Database,
    private readonly log: Logger,
    metrics: Metrics,
    opts: BotTallyOptions = {},
  ) {
    this.flushMs = opts.flushMs ?? 1_000;
    this.counter = new client.Counter({
      name: 'trackway_bot_requests_total',
      help: 'tracking API (/jsv1) requests answered but not stored because they came from a known bot (filter_bots), by reason: user_agent, webdriver',
      labelNames: ['reason'] as const,
      registers: [metrics.registry],
    });
    for (const reason of BOT_REASONS) this.counter.inc({ reason }, 0);
  }

  /** One request of this organisation kept out. */
  count(orgId: OrgId, reason: BotReason, at: Date): void {
    this.counter.inc({ reason });
    this.hold(orgId, `${Math.floor(at.getTime() / HOUR) * HOUR}|${reason}`, 1);
  }

  /** Writes what is held in memory; resolves when it (and any flush before it) is done. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.pending;
    this.pending = new Map();
    this.flushing = this.flushing.then(() => this.write(batch));
    return this.flushing;
  }

  private async write(batch: Map<OrgId, Map<string, number>>): Promise<void> {
    const hourNow = Math.floor(Date.now() / HOUR) * HOUR;
    for (const [orgId, counts] of batch) {
      const rows: BotCountRow[] = [...counts].map(([key, requests]) => {
        const [hour, reason] = key.split('|') as [string, BotReason];
        return { hour: new Date(Number(hour)), reason, requests };
      });
      try {
        await addBotCounts(this.db, orgId, rows);
        if (this.pruned.get(orgId) !== hourNow) {
          if (this.pruned.size > 100_000) this.pruned.clear();
          this.pruned.set(orgId, hourNow);
          await pruneBotCounts(this.db, orgId, new Date(hourNow - KEEP_MS));
        }
      } catch (err) {
        this.log.warn({ err, orgId }, 'could not write the bot counts; trying again with the next flush');
        for (const r of rows) this.hold(orgId, `${r.hour.getTime()}|${r.reason}`, r.requests);
      }
    }
  }

  /** keeps counts in memory until the next flush (which it schedules) */
  private hold(orgId: OrgId, key: string, n: number): void {
    let org = this.pending.get(orgId);
    if (!org) this.pending.set(orgId, (org = new Map()));
    org.set(key, (org.get(key) ?? 0) + n);
    if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), this.flushMs);
      this.timer.unref();
    }
  }
}

/**
 * The ingest path with bots kept out: an item marked `bot` is counted and
 * answered at once (as if committed), never queued; everything else goes to
 * `inner`. drain() also writes the counts still held in memory.
 */
export function keepBotsOut(inner: Ingestor, tally: BotTally): Ingestor {
  return {
    submit(item) {
      if (item.bot === undefined) return inner.submit(item);
      tally.count(item.orgId, item.bot, item.receivedAt);
      return Promise.resolve();
    },
    async drain() {
      await inner.drain();
      await tally.flush();
    },
  };
}
