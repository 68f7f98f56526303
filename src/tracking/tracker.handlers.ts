// getTrackerScript: the browser tracker (tracker-bundle.service.ts), loaded at start. Short
// public caching with an ETag (304 on a matching If-None-Match), gzip for
// clients that accept it.
import type Koa from 'koa';
import type { Deps } from '../deps.ts';
import type { HandlerMap, SuccessOf } from '../http/types.ts';
import { getTracker } from './tracker-bundle.service.ts';

/** What the contract documents (TrackerCacheControl): a new version reaches shops within minutes. */
export const TRACKER_CACHE_CONTROL = 'public, max-age=300';

/** Entity tags of If-None-Match, weak or strong (`*` matches anything). */
function matches(ifNoneMatch: string, etag: string): boolean {
  if (!ifNoneMatch) return false;
  const bare = etag.slice(1, -1);
  return ifNoneMatch.split(',').some((raw) => {
    const tag = raw.trim().replace(/^W\//, '');
    if (tag === '*') return true;
    // the gzip representation's tag is the identity one's plus "-gz"
    const inner = tag.replace(/^"(.*)"$/, '$1').replace(/-gz$/, '');
    return inner === bare;
  });
}

export function trackerHandlers(deps: Deps): HandlerMap<'getTrackerScript'> {
  // build now so the first request does not wait; a failed build is logged here
  // and tried again by the next request (which then answers 500)
  getTracker().catch((err: unknown) => deps.log.error({ err }, 'the browser tracker could not be built'));
  return {
    getTrackerScript: async (_c, ctx: Koa.Context) => {
      const tracker = await getTracker();
      const gzip = ctx.acceptsEncodings('gzip', 'identity') === 'gzip';
      const etag = gzip ? `${tracker.etag.slice(0, -1)}-gz"` : tracker.etag;
      const headers: Record<string, string> = { ETag: etag, 'Cache-Control': TRACKER_CACHE_CONTROL, Vary: 'Accept-Encoding' };
      if (matches(ctx.get('if-none-match'), tracker.etag)) {
        return { status: 304, body: undefined, headers } as unknown as SuccessOf<'getTrackerScript'>;
      }
      if (gzip) {
        headers['Content-Encoding'] = 'gzip';
        return { status: 200, body: tracker.gzip, headers, type: 'text/javascript; charset=utf-8' } as unknown as SuccessOf<'getTrackerScript'>;
      }
      return { status: 200, body: tracker.code, headers, type: 'text/javascript; charset=utf-8' };
    },
  };
}
