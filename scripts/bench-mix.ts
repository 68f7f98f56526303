// The requests of the mixed scenario (scripts/bench-mixed.ts): a shop's
// traffic in one organisation that exports events. Each request is one of
//   exported   a page view by one of `contacts` visitors identified before the
//              rounds: the organisation's do_events integration gets it
//              (one delivery), its page URL carries a marker (`?m=`) that the
//              receiver reads back, to pair the arrival with the request;
//   identify   GET identify, a new visitor and a new email;
//   fresh      a page view by a new visitor;
//   returning  a page view by one of RETURNING_VISITORS anonymous visitors.
// The kinds are interleaved by a low-discrepancy sequence (n·φ mod 1), so
// every stretch of requests holds each kind at its share, and a run is the
// same sequence every time.
import type { MixOptions } from './bench-args.ts';
import type { RequestFactory } from './bench-rounds.ts';
import { RETURNING_VISITORS, freshId, knownId } from './bench-scenarios.ts';

export type MixKind = 'exported' | 'identify' | 'fresh' | 'returning';

const PHI = (Math.sqrt(5) - 1) / 2;

/** The kind of request n (n = 1, 2, …) under the given shares. */
export function mixKind(n: number, mix: Pick<MixOptions, 'exported' | 'identify' | 'fresh'>): MixKind {
  const u = (n * PHI) % 1;
  if (u < mix.exported) return 'exported';
  if (u < mix.exported + mix.identify) return 'identify';
  const anonymous = 1 - mix.exported - mix.identify;
  return (u - mix.exported - mix.identify) / anonymous < mix.fresh ? 'fresh' : 'returning';
}

const CLIENTS = ['193.0.6.139', '8.8.4.4', '2001:200::1', '81.2.69.160', '139.130.4.5', '1.1.1.1', '2a00:1450:4001::1', '200.160.2.3'];

export interface MixedRequests {
  /** the mix itself (used by every server) */
  make: RequestFactory;
  /** markers of exported requests made from now on start with this (e.g. the round and phase) */
  setPhase(phase: string): void;
  /** the identify requests that make the contact visitors (sent once, before the rounds) */
  contactIdentifies(): RequestFactory;
  /** one view by each returning visitor (sent once, before the rounds) */
  returningViews(): RequestFactory;
  counts: Record<MixKind, number>;
}

export function mixedRequests(org: number, run: string, domain: string, mix: MixOptions): MixedRequests {
  const json = { 'content-type': 'application/json' };
  const contacts = Array.from({ length: mix.contacts }, (_, i) => knownId(`m${run}-contact-${i}`));
  const returning = Array.from({ length: RETURNING_VISITORS }, (_, i) => knownId(`m${run}-known-${i}`));
  const counts: Record<MixKind, number> = { exported: 0, identify: 0, fresh: 0, returning: 0 };
  let phase = 'x';
  let n = 0;
  const view = (core: string, k: number, marker?: string) => ({
    method: 'POST' as const,
    path: `/jsv1/${org}/r${core.slice(0, 16)}/${core}/null/event/view`,
    body: JSON.stringify({ page: `https://${domain}/collections/summer?page=${k % 50}${marker ? `&m=${marker}` : ''}` }),
    headers: { ...json, 'x-forwarded-for': CLIENTS[k % CLIENTS.length]! },
    ...(marker ? { tag: marker } : {}),
  });
  const identify = (core: string, email: string, k: number) => {
    const payload = Buffer.from(JSON.stringify({ email, name: 'Bench Visitor' })).toString('base64url');
    return {
      method: 'GET' as const,
      path: `/jsv1/identify/${org}/r${core.slice(0, 16)}/${core}/${payload}`,
      headers: { 'x-forwarded-for': CLIENTS[k % CLIENTS.length]! },
    };
  };
  const make: RequestFactory = () => {
    const k = ++n;
    const kind = mixKind(k, mix);
    counts[kind]++;
    switch (kind) {
      case 'exported':
        return view(contacts[k % contacts.length]!, k, `${phase}-${k}`);
      case 'identify': {
        const core = freshId();
        return identify(core, `${core}@mixed.bench.example`, k);
      }
      case 'fresh':
        return view(freshId(), k);
      case 'returning':
        return view(returning[k % returning.length]!, k);
    }
  };
  return {
    make,
    setPhase: (p) => (phase = p),
    contactIdentifies: () => {
      let i = 0;
      return () => {
        const k = i++ % contacts.length;
        return identify(contacts[k]!, `contact-${k}-${run}@mixed.bench.example`, k);
      };
    },
    returningViews: () => {
      let i = 0;
      return () => view(returning[i++ % returning.length]!, i);
    },
    counts,
  };
}
