// The k dispatchers of one `serve --workers N` host split the host's caps
// (WEBHOOK_CONCURRENCY per integration, WEBHOOK_DISPATCH_CAPACITY, _RESERVE,
// WEBHOOK_ORGANISATION_SHARE) instead of each applying all of them: dispatcher
// i of k gets floor(cap / k), plus one when i < cap mod k, so the parts sum to
// the cap exactly. A slow endpoint's reduced lane is split the same way
// (lanes.rules.ts): the host's limit, not each process's, is
// `WEBHOOK_CONCURRENCY × slowMs / time`, at least 1, so below k some
// dispatchers get 0 for it and leave its deliveries to the others.
// The primary runs at most as many dispatchers as the smallest of these caps
// (dispatchersFor), so every part of a setting is at least 1.

/** This dispatcher's place among the host's dispatchers, and the host's per-integration cap. */
export interface HostSplit {
  /** 0-based */
  index: number;
  count: number;
  /** WEBHOOK_CONCURRENCY for the whole host */
  perIntegration: number;
}

/** Dispatcher `index` of `count`'s part of a host cap: the parts sum to `total`. */
export function partOf(total: number, index: number, count: number): number {
  return Math.floor(total / count) + (index < total % count ? 1 : 0);
}

export interface SplitCaps {
  perIntegration: number;
  perOrganisation: number;
  global: number;
  reserve: number;
}

/** The caps one dispatcher applies: its part of each of the host's. */
export function splitCaps<T extends SplitCaps>(host: T, index: number, count: number): T & { split: HostSplit } {
  return {
    ...host,
    perIntegration: partOf(host.perIntegration, index, count),
    perOrganisation: partOf(host.perOrganisation, index, count),
    global: partOf(host.global, index, count),
    reserve: partOf(host.reserve, index, count),
    split: { index, count, perIntegration: host.perIntegration },
  };
}

/** How many of `workers` run a dispatcher: as configured (undefined: all), at most the smallest cap, so that no part is 0. */
export function dispatchersFor(workers: number, configured: number | undefined, caps: SplitCaps): number {
  return Math.max(1, Math.min(workers, configured ?? workers, caps.perIntegration, caps.reserve, caps.global - caps.reserve));
}
