// The raw got loop of `npm run bench`'s dispatch scenario: the limit of the
// dispatcher's own HTTP client. got with a keep-alive agent (as many sockets
// as requests in flight), no retries, no redirects, a request timeout, the
// delivery's headers and body, CONCURRENCY requests in flight to one receiver.
//
// GOT_MODE=prepared (default) makes each request the way src/webhooks/sender.client.ts
// does (a stream over got Options prepared once, their cacheOptions emptied;
// only body and headers merged per request), the cheapest way to drive got
// that we know; GOT_MODE=plain
// uses `client.post(url, {body, headers})`, got's ordinary promise API.
//
// Protocol with scripts/bench-dispatch.ts: prints `ready` after a warm-up,
// then for each line `go N` on stdin sends N requests and prints one JSON line
// {"sent", "ok", "errors", "seconds"}. Run as plain JavaScript (esbuild), never
// through tsx.
import http from 'node:http';
import readline from 'node:readline';
import got, { Options } from 'got';

const URL_ = new URL(process.env.GOT_URL!);
const CONCURRENCY = Number(process.env.GOT_CONCURRENCY ?? 8);
const MODE = process.env.GOT_MODE ?? 'prepared';
const BODY = process.env.GOT_BODY ?? '{}';
const HEADERS = JSON.parse(process.env.GOT_HEADERS ?? '{}') as Record<string, string>;

const agent = new http.Agent({
  keepAlive: true,
  keepAliveMsecs: 1000,
  maxSockets: CONCURRENCY,
  maxFreeSockets: CONCURRENCY,
  scheduling: 'lifo',
  timeout: 30_000,
});
const client = got.extend({ followRedirect: false, retry: { limit: 0 }, throwHttpErrors: false, decompress: true, http2: false });
const prepared = new Options(
  { method: 'POST', isStream: true, timeout: { request: 10_000 }, agent: { http: agent } },
  undefined,
  client.defaults.options,
);
// as the sender does (src/webhooks/sender.client.ts preparedOptions): got's per-request
// options spread cacheOptions, which costs V8 ~80 µs when it is not empty
prepared.cacheOptions = {};
type Stream = ReturnType<typeof got.stream>;
const streamRequest = client as unknown as (u: URL, o: object, d: Options) => Stream;

let seq = 0;
function headers(): Record<string, string> {
  // a distinct webhook-id per request, as deliveries have
  return { ...HEADERS, 'webhook-id': `msg_${(++seq).toString(16).padStart(32, '0')}` };
}

function sendPrepared(): Promise<boolean> {
  return new Promise((resolve) => {
    let status = 0;
    let done = false;
    const finish = (ok: boolean) => {
      if (!done) {
        done = true;
        resolve(ok);
      }
    };
    const s = streamRequest(URL_, { body: BODY, headers: headers() }, prepared);
    s.on('response', (res: http.IncomingMessage) => (status = res.statusCode ?? 0));
    s.on('data', () => {});
    s.on('end', () => finish(status >= 200 && status < 300));
    s.on('error', () => finish(false));
    s.on('close', () => finish(status >= 200 && status < 300));
  });
}

async function sendPlain(): Promise<boolean> {
  try {
    const r = await client.post(URL_, { body: BODY, headers: headers(), agent: { http: agent }, timeout: { request: 10_000 } });
    return r.statusCode >= 200 && r.statusCode < 300;
  } catch {
    return false;
  }
}

const send = MODE === 'plain' ? sendPlain : sendPrepared;

async function run(n: number): Promise<{ sent: number; ok: number; errors: number; seconds: number }> {
  let next = 0;
  let ok = 0;
  let errors = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < n) {
        next++;
        if (await send()) ok++;
        else errors++;
      }
    }),
  );
  return { sent: n, ok, errors, seconds: (performance.now() - t0) / 1000 };
}

await run(Math.max(200, CONCURRENCY * 50)); // warm-up: sockets open, code optimised
process.stdout.write('ready\n');
const rl = readline.createInterface({ input: process.stdin });
for await (const line of rl) {
  const m = /^go (\d+)$/.exec(line.trim());
  if (!m) break;
  process.stdout.write(JSON.stringify(await run(Number(m[1]))) + '\n');
}
agent.destroy();
process.exit(0);
