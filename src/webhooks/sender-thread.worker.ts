// The body of the dispatcher's sending thread (thread-sender.client.ts):
// runs the attempts it is sent with the ordinary sender (sender.client.ts)
// and posts their results back, gathered per turn of its event loop.
//
// Messages in: { t: 'send', reqs: WireRequest[] }, { t: 'abort' } (every
// attempt in flight and every later one is interrupted), { t: 'close' }.
// Messages out: { t: 'ready' } once loaded, { t: 'done', results: WireResult[] }.
import { parentPort, workerData } from 'node:worker_threads';
import { type SendResult, type SenderOptions, createSender, unsentAttempt } from './sender.client.ts';
import type { FromThread, WireRequest, WireResult, ToThread } from './thread-sender.client.ts';

const port = parentPort;
if (!port) throw new Error('sender-thread.worker.ts runs as a worker thread only');

const sender = createSender((workerData as { options: SenderOptions }).options);
const abort = new AbortController();
let out: WireResult[] = [];

function flush(): void {
  const results = out;
  out = [];
  port!.postMessage({ t: 'done', results } satisfies FromThread);
}

function settled(id: number, r: SendResult): void {
  if (out.length === 0) setImmediate(flush);
  out.push([id, r.startedAt.getTime(), r.statusCode, r.durationMs, r.error, r.responseExcerpt, r.retryAfterMs, r.permanent]);
}

function send(req: WireRequest): void {
  const [id, url, body, headers, timeoutMs] = req;
  sender.send({ url, body, headers, timeoutMs, signal: abort.signal }).then(
    (r) => settled(id, r),
    // send() resolves whatever happens; should it ever throw, the attempt still ends
    (err: unknown) => settled(id, unsentAttempt(String((err as Error)?.message ?? err).slice(0, 500))),
  );
}

port.on('message', (msg: ToThread) => {
  if (msg.t === 'send') for (const r of msg.reqs) send(r);
  else if (msg.t === 'abort') abort.abort();
  else if (msg.t === 'close') {
    sender.close();
    port.close();
  }
});

port.postMessage({ t: 'ready' } satisfies FromThread);
