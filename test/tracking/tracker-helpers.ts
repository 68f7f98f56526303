// The browser tracker test's fake shop and what it observes (tracker.browser.test.ts):
// a shop on its own node:http server serving pages with the tracker snippet,
// and a recorder decoding Chromium's own requests (beacons and fetches) into
// the events and identifies the tracker sent.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import type { BrowserContext, Page } from 'playwright-core';
import type { OrgId } from '../../src/db/tenancy.ts';

export interface Shop {
  url: string;
  close(): Promise<void>;
}

/** The fake shop: product, cart and "queue before load" pages with the tracker snippet. */
export async function startShop(trackerUrl: string, orgId: OrgId): Promise<Shop> {
  const snippet = (before = '') => `
    <script>
      window.trackway = window.trackway || [];
      ${before}
    </script>
    <script async src="${trackerUrl}/jsv1/tracker.js" data-org-id="${orgId}"></script>`;
  const page = (title: string, head: string, body = '') =>
    `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title>${head}</head>` +
    `<body><h1>${title}</h1>${body}<p id="status">ok</p></body></html>`;
  const pages: Record<string, string> = {
    '/products/linen-shirt': page('Linen shirt', snippet(), '<button id="add">Add to cart</button>'),
    '/collections/summer': page(
      'Summer collection',
      snippet(`
      trackway.push(['track', 'categoryview', { category: 'summer' }]);
      trackway.push(['identify', { email: 'queued@example.com' }]);
      trackway.push(['setCorexId', 'shop-customer-7']);
      trackway.push('garbage', ['nope'], ['track'], ['identify', null], ['setCorexId', 'bad id!']);`),
    ),
    '/plain': page('Plain page', snippet()),
  };
  const server = http.createServer((req, res) => {
    const body = pages[(req.url ?? '/').split('?')[0]!];
    res.writeHead(body ? 200 : 404, { 'content-type': 'text/html; charset=utf-8' });
    res.end(body ?? 'not found');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** One request the tracker made, decoded. */
export interface Sent {
  method: string;
  kind: 'event' | 'identify';
  /** DevTools resource type: `Ping` for a beacon, `Fetch` for fetch */
  type: string;
  org: string;
  roaming: string;
  core: string;
  corex: string | null;
  name?: string;
  body?: Record<string, unknown>;
  payload?: Record<string, unknown>;
  contentType?: string;
}

const EVENT = /^\/jsv1\/(\d+)\/([^/]+)\/([^/]+)\/([^/]+)\/event\/([a-z]+)$/;
const IDENTIFY = /^\/jsv1\/identify\/(\d+)\/([^/]+)\/([^/]+)\/([^/]+)$/;

interface CdpRequest {
  requestId: string;
  type?: string;
  request: { url: string; method: string; headers: Record<string, string>; hasPostData?: boolean; postData?: string };
}

function decode(e: CdpRequest, postData: string | undefined): Sent | undefined {
  const { url, method, headers } = e.request;
  const path = new URL(url).pathname;
  let m = EVENT.exec(path);
  if (m) {
    return {
      method,
      kind: 'event',
      type: e.type ?? '',
      org: m[1]!,
      roaming: m[2]!,
      core: m[3]!,
      corex: m[4] === 'null' ? null : m[4]!,
      name: m[5]!,
      body: postData === undefined ? undefined : (JSON.parse(postData) as Record<string, unknown>),
      contentType: Object.entries(headers).find(([k]) => k.toLowerCase() === 'content-type')?.[1],
    };
  }
  m = IDENTIFY.exec(path);
  if (m) {
    expect(m[4], 'base64url without padding').to.match(/^[A-Za-z0-9_-]+$/);
    return {
      method,
      kind: 'identify',
      type: e.type ?? '',
      org: m[1]!,
      roaming: m[2]!,
      core: m[3]!,
      corex: null,
      payload: JSON.parse(Buffer.from(m[4]!, 'base64url').toString('utf8')) as Record<string, unknown>,
    };
  }
  return undefined;
}

/**
 * Records what a page sends to Trackway, and the errors it throws. Requests
 * are observed through Chromium's DevTools protocol (Network domain), which
 * sees beacons too; a beacon's Blob body is not in the request event, so it is
 * read with Network.getRequestPostData.
 */
export class Recorder {
  readonly sent: Sent[] = [];
  readonly pageErrors: Error[] = [];
  readonly failures: string[] = [];
  private waiters: (() => void)[] = [];

  private constructor(page: Page) {
    page.on('pageerror', (e) => this.pageErrors.push(e));
  }

  static async attach(context: BrowserContext, page: Page, trackwayUrl: string): Promise<Recorder> {
    const rec = new Recorder(page);
    const cdp = await context.newCDPSession(page);
    await cdp.send('Network.enable');
    cdp.on('Network.requestWillBeSent', (e: CdpRequest) => {
      if (!e.request.url.startsWith(`${trackwayUrl}/jsv1/`)) return;
      void (async () => {
        let postData = e.request.postData;
        if (postData === undefined && e.request.hasPostData) {
          postData = ((await cdp.send('Network.getRequestPostData', { requestId: e.requestId })) as { postData: string }).postData;
        }
        const s = decode(e, postData);
        if (!s) return;
        rec.sent.push(s);
        for (const w of rec.waiters.splice(0)) w();
      })().catch((err: unknown) => rec.failures.push(String(err)));
    });
    return rec;
  }

  /** The first sent request matching `pred`, waiting for it if need be. */
  async next(pred: (s: Sent) => boolean, what: string, timeoutMs = 10_000): Promise<Sent> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.sent.find(pred);
      if (found) return found;
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new Error(`the tracker did not send ${what}; it sent: ${JSON.stringify(this.sent, null, 1)} ${this.failures.join('; ')}`);
      }
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  event(name: string) {
    return this.next((s) => s.kind === 'event' && s.name === name, `a ${name} event`);
  }
}

/** Calls a careless page might make; answers which of them threw. */
export const GARBAGE_CALLS = `(() => {
  const tw = window.trackway;
  const circular = { product_id: 1 };
  circular.self = circular;
  const throwing = { get product_id() { throw new Error('boom'); } };
  const calls = [
    ['track', []],
    ['track', [42]],
    ['track', ['bogus', {}]],
    ['track', ['productview', circular]],
    ['track', ['productview', throwing]],
    ['track', ['updatecart', 'not an object']],
    ['track', [Symbol('x'), {}]],
    ['track', ['view', 12]],
    ['identify', []],
    ['identify', [null]],
    ['identify', ['jane@example.com']],
    ['identify', [{ email: { toString() { throw new Error('boom'); } } }]],
    ['identify', [{ email: '' }]],
    ['setCorexId', [{}]],
    ['setCorexId', ['x'.repeat(65)]],
    ['setCorexId', ['has space']],
    ['push', [undefined]],
    ['push', [['track', 'productview', throwing]]],
    ['push', [['constructor']]],
    ['push', [['__proto__']]],
    ['ids', []],
  ];
  const threw = [];
  for (const [fn, args] of calls) {
    try { tw[fn](...args); } catch (e) { threw.push(fn + ': ' + String(e)); }
  }
  return { threw, ids: tw.ids() };
})()`;
