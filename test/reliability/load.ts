// A steady tracking load with identified visitors, for the crash and
// database-restart tests. Each worker walks through visitors: it identifies
// one (again until acknowledged) and then sends its events, each carrying a
// unique marker URL, one after the other. It remembers exactly which calls
// were acknowledged (2xx) and what every other answer was.
import type { Database } from '../../src/db/database.ts';
import { b64url } from '../support/payload.ts';
import type { OrgId } from '../../src/db/tenancy.ts';

export interface LoadOptions {
  /** the server's address now (it may change between restarts) */
  base: () => string;
  orgId: OrgId;
  workers: number;
  eventsPerVisitor: number;
  tag: string;
  /** pause between two requests of a worker */
  pauseMs?: number;
}

export interface Answer {
  status: number;
  body: string;
  retryAfter: string | null;
  contentType: string | null;
}

export interface LoadFigures {
  /** core_id → email of every visitor whose identify was acknowledged */
  identified: Map<string, string>;
  /** marker URLs of the events acknowledged with 2xx */
  acknowledged: string[];
  eventsSent: number;
  identifiesSent: number;
  /** answers by status (0 = no answer: connection refused or reset) */
  statuses: Map<number, number>;
  /** every answer that was not a 2xx (network failures excluded) */
  refusals: Answer[];
}

export interface Load {
  figures: LoadFigures;
  /** acknowledged events so far */
  readonly acked: number;
  /** stops sending and resolves once every worker is done */
  stop(): Promise<LoadFigures>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function markerUrl(marker: string): string {
  return `https://shop.example/p/${marker}`;
}

export function startLoad(opts: LoadOptions): Load {
  const figures: LoadFigures = { identified: new Map(), acknowledged: [], eventsSent: 0, identifiesSent: 0, statuses: new Map(), refusals: [] };
  let stopped = false;
  const pause = opts.pauseMs ?? 2;

  async function send(method: 'GET' | 'POST', path: string, body?: unknown): Promise<boolean> {
    let status = 0;
    try {
      const res = await fetch(opts.base() + path, {
        method,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(15_000),
      });
      status = res.status;
      const text = await res.text();
      if (status < 200 || status >= 300) {
        figures.refusals.push({ status, body: text, retryAfter: res.headers.get('retry-after'), contentType: res.headers.get('content-type') });
      }
    } catch {
      status = 0; // refused, reset or timed out: not acknowledged
    }
    figures.statuses.set(status, (figures.statuses.get(status) ?? 0) + 1);
    return status >= 200 && status < 300;
  }

  async function worker(w: number): Promise<void> {
    for (let v = 0; !stopped; v++) {
      const coreId = `${opts.tag}-w${w}-v${v}`;
      const roamingId = `r-${coreId}`;
      const email = `${coreId}@visitors.example`;
      for (;;) {
        if (stopped) return;
        figures.identifiesSent++;
        if (await send('GET', `/jsv1/identify/${opts.orgId}/${roamingId}/${coreId}/${b64url({ email })}`)) break;
        await sleep(20);
      }
      figures.identified.set(coreId, email);
      for (let k = 0; k < opts.eventsPerVisitor && !stopped; k++) {
        const url = markerUrl(`${coreId}-e${k}`);
        const [name, body] = k % 2 === 0 ? ['view', { page: url }] : ['productview', { product_id: 1000 + k, price: 9.5, product_url: url }];
        figures.eventsSent++;
        if (await send('POST', `/jsv1/${opts.orgId}/${roamingId}/${coreId}/null/event/${name}`, body)) figures.acknowledged.push(url);
        if (pause) await sleep(pause);
      }
    }
  }

  const running = Promise.all(Array.from({ length: opts.workers }, (_, w) => worker(w)));
  return {
    figures,
    get acked() {
      return figures.acknowledged.length;
    },
    async stop() {
      stopped = true;
      await running;
      return figures;
    },
  };
}

export { until } from '../support/wait.ts';

/** The marker URLs of the organisation's stored events. */
export async function storedMarkers(db: Database, orgId: OrgId): Promise<Set<string>> {
  const rows = await db.selectFrom('events').select(['body']).where('org_id', '=', orgId).execute();
  const out = new Set<string>();
  for (const r of rows) {
    const b = r.body as { page?: string; product_url?: string };
    const u = b.page ?? b.product_url;
    if (u) out.add(u);
  }
  return out;
}
