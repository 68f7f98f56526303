// The browser tracker served at /jsv1/tracker.js (bundled and minified by
// ../tracker-bundle.ts: into dist/assets/ by `npm run build`, into memory
// under tsx). It runs on merchants' pages:
//
//   <script async src="https://track.example/jsv1/tracker.js" data-org-id="42"></script>
//
// Browser code with no dependencies and no imports. Everything is wrapped:
// it never throws into the host page, never blocks it (no synchronous
// requests, no waiting) and leaves no unhandled promise rejection.
//
// - core_id: first-party visitor id, kept two years (renewed on each use);
//   roaming_id: session id, renewed after 30 minutes without activity. Both in
//   localStorage, else in a cookie, else in memory for the page's life.
// - Sends a `view` of the page on load; events go by navigator.sendBeacon
//   (a text/plain body) or fetch(..., {keepalive: true}); identify is a GET.
// - Calls queued before load (`window.trackway = window.trackway || [];
//   trackway.push(['identify', {...}])`) are replayed: `setCorexId` first, so
//   that the page view already carries it, then the view, then the others in
//   their order.
// - identify({email, phone, name, hash}): `hash` is the identity-verification
//   HMAC the shop's server computed for the signed-in customer; passed through.
// - Global Privacy Control (README "The browser tracker"): when
//   navigator.globalPrivacyControl is true, identify sends nothing (the email,
//   phone and name never leave the browser) and setCorexId is ignored (events
//   carry corex_id `null`); events still go, with the browser's own
//   `Sec-GPC: 1`, which the server honours by linking them to no one. A
//   script element with data-honor-gpc="false" (an organisation that turned
//   honor_gpc off) sends as usual.
// - Bots (README "Bots"): when navigator.webdriver is true (a browser driven
//   by automation), every request carries `?webdriver=1`; the server stores
//   none of it under the organisation's filter_bots.

interface TrackwayIds {
  org_id: number | null;
  roaming_id: string;
  core_id: string;
  corex_id: string | null;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- whatever the host page passes
type Anything = any;

((w: Window & { trackway?: Anything }, d: Document) => {
  const noop = () => {};
  /** `fn` that swallows its errors: the host page never sees one. */
  const safe =
    <A extends Anything[]>(fn: (...a: A) => void) =>
    (...a: A): void => {
      try {
        fn(...a);
      } catch {
        // never into the page
      }
    };

  try {
    const previous = w.trackway;
    if (previous && typeof previous.ids === 'function') return; // already running on this page
    const queue: Anything[] = Array.isArray(previous) ? previous.slice() : [];

    const ID = /^[A-Za-z0-9._-]{1,64}$/;
    const EVENTS = /^(view|updatecart|removefromcart|checkout|buy|productview|categoryview)$/;
    const CORE = '_tw_core';
    const ROAMING = '_tw_roam';
    const MINUTE = 60e3;

    const script = (d.currentScript || d.querySelector('script[data-org-id][src*="/jsv1/tracker.js"]')) as HTMLScriptElement | null;
    const org = (script && script.getAttribute('data-org-id')) || '';
    let base = '';
    try {
      if (/^[1-9]\d{0,15}$/.test(org)) base = new URL(script!.src).origin;
    } catch {
      // no usable src: nothing is sent
    }
    let corex: string | null = null;
    const gpc = (navigator as Anything).globalPrivacyControl === true && !(script && script.getAttribute('data-honor-gpc') === 'false');
    const bot = (navigator as Anything).webdriver === true ? '?webdriver=1' : '';

    // ---- ids: "id~expiry" (expiry in ms, base 36) in localStorage, else a cookie, else memory
    const memory: Record<string, string> = {};
    const read = (key: string): string | null => {
      let v: string | null = null;
      try {
        v = w.localStorage.getItem(key);
      } catch {
        // storage blocked
      }
      if (!v) {
        try {
          const m = d.cookie.match(new RegExp('(?:^|; )' + key + '=([^;]*)'));
          v = m && m[1]!;
        } catch {
          // cookies blocked
        }
      }
      return v || memory[key] || null;
    };
    const write = (key: string, id: string, ttl: number) => {
      const v = id + '~' + (Date.now() + ttl).toString(36);
      memory[key] = v;
      try {
        w.localStorage.setItem(key, v);
        return;
      } catch {
        // fall back to a cookie
      }
      try {
        d.cookie = `${key}=${v}; max-age=${ttl / 1000}; path=/; SameSite=Lax${location.protocol === 'https:' ? '; Secure' : ''}`;
      } catch {
        // memory only
      }
    };
    /**
     * 32 hex digits. A core_id (`timed`) starts with 12 of them for the
     * milliseconds since the epoch, then 20 random: the ids of new visitors
     * arrive in order, so the visitors index grows at its right edge
     * (docs/design.md "Time-ordered visitor ids"). A roaming_id is all random.
     */
    const random = (timed: boolean): string => {
      const bytes = new Uint8Array(16);
      try {
        w.crypto.getRandomValues(bytes);
      } catch {
        for (let i = 0; i < 16; i++) bytes[i] = Math.random() * 256;
      }
      let s = timed ? (Date.now() + 2 ** 48).toString(16).slice(1) : '';
      for (let i = timed ? 6 : 0; i < 16; i++) s += (bytes[i]! | 256).toString(16).slice(1);
      return s;
    };
    /** The stored id if still valid, else a new one; either way its expiry starts again. */
    const id = (key: string, ttl: number): string => {
      const [v, exp] = (read(key) || '').split('~');
      const keep = v && ID.test(v) && parseInt(exp || '0', 36) > Date.now() ? v : random(key === CORE);
      write(key, keep, ttl);
      return keep;
    };
    const ids = (): TrackwayIds => ({
      org_id: base ? Number(org) : null,
      roaming_id: id(ROAMING, 30 * MINUTE),
      core_id: id(CORE, 730 * 24 * 60 * MINUTE),
      corex_id: corex,
    });

    // ---- transport
    const get = (url: string) => {
      if (w.fetch) w.fetch(url, { keepalive: true, credentials: 'omit' }).catch(noop);
      else new Image().src = url;
    };
    const send = (name: string, body: object) => {
      if (!base) return;
      const i = ids();
      const url = `${base}/jsv1/${org}/${i.roaming_id}/${i.core_id}/${i.corex_id || 'null'}/event/${name}${bot}`;
      const json = JSON.stringify(body);
      const n = navigator;
      try {
        if (n.sendBeacon && n.sendBeacon(url, new Blob([json], { type: 'text/plain' }))) return;
      } catch {
        // fall back to fetch
      }
      if (w.fetch) w.fetch(url, { method: 'POST', body: json, keepalive: true, credentials: 'omit' }).catch(noop);
    };
    const base64url = (text: string): string => {
      let bin = '';
      for (const b of new TextEncoder().encode(text)) bin += String.fromCharCode(b);
      return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
    };

    // ---- the API
    const identify = (who: Anything) => {
      if (!base || gpc || !who || typeof who !== 'object') return;
      const payload: Record<string, string> = {};
      let any = false;
      for (const k of ['email', 'phone', 'name', 'hash']) {
        const v = who[k];
        if (typeof v === 'string' ? v.trim() : typeof v === 'number') {
          payload[k] = String(v).trim();
          any = true;
        }
      }
      if (!any) return;
      const i = ids();
      get(`${base}/jsv1/identify/${org}/${i.roaming_id}/${i.core_id}/${base64url(JSON.stringify(payload))}${bot}`);
    };
    const track = (name: Anything, body?: Anything) => {
      if (typeof name !== 'string' || !EVENTS.test(name)) return;
      if (name === 'view' && body == null) body = { page: location.href };
      if (body && typeof body === 'object' && !Array.isArray(body)) send(name, body);
    };
    const setCorexId = (value: Anything) => {
      if (gpc || value == null || value === '') corex = null;
      else if ((typeof value === 'string' || typeof value === 'number') && ID.test(String(value))) corex = String(value);
    };
    const commands: Record<string, (...a: Anything[]) => void> = { identify, track, setCorexId };
    const run = (cmd: Anything) => {
      if (Array.isArray(cmd) && typeof cmd[0] === 'string' && Object.prototype.hasOwnProperty.call(commands, cmd[0])) {
        commands[cmd[0]]!(...cmd.slice(1));
      }
    };

    const api = {
      identify: safe(identify),
      track: safe(track),
      setCorexId: safe(setCorexId),
      ids: (): TrackwayIds | null => {
        try {
          return ids();
        } catch {
          return null;
        }
      },
      push: safe((...cmds: Anything[]) => cmds.forEach(safe(run))),
    };
    w.trackway = api;
    // a page that kept a reference to the queue array keeps working too
    if (Array.isArray(previous)) previous.push = ((...cmds: Anything[]) => (api.push(...cmds), previous.length)) as never;

    const isCorex = (c: Anything) => Array.isArray(c) && c[0] === 'setCorexId';
    queue.filter(isCorex).forEach(safe(run));
    safe(track)('view');
    queue.filter((c) => !isCorex(c)).forEach(safe(run));
  } catch {
    // never into the page
  }
})(window, document);
