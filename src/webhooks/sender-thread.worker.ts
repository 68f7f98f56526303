// The body of the dispatcher's sending thread (thread-sender.client.ts):
// runs the attempts it is sent with the ordinary sender (sender.client.ts)
// and posts their results back, gathered per turn of its event loop. An
// attempt with a lane waits here for a slot of its integration's cap
// (lane-gate.rules.ts): the next one starts as the last ends, without a
// round trip to the dispatcher's thread; a failed one gives back what waits
// in its lane instead.
//
// Messages in: { t: 'send', reqs: WireRequest[] }, { t: 'drop', lane } (what
// waits in the lane, or in every lane when it is null, ends not started),
// { t: 'abort' } (what waits ends not started; every attempt in flight and
// every later one is interrupted), { t: 'close' }.
// Messages out: { t: 'ready' } once loaded, { t: 'done', results: WireResult[] }.
import { setMaxListeners } from 'node:events';
import { parentPort, workerData } from 'node:worker_threads';
import { LaneGate } from './lane-gate.rules.ts';
import { delivers } from './retry.rules.ts';
import { type SendResult, type SenderOptions, createSender, notStarted, unsentAttempt } from './sender.client.ts';
import { NO_LANE, type FromThread, type WireRequest, type WireResult, type ToThread } from './thread-sender.client.ts';

const port = parentPort;
if (!port) throw new Error('sender-thread.worker.ts runs as a worker thread only');

const sender = createSender((workerData as { options: SenderOptions }).options);
const abort = new AbortController();
setMaxListeners(0, abort.signal); // one listener per attempt in flight, as on the dispatcher's thread
const gate = new LaneGate();
let out: WireResult[] = [];

function flush(): void {
  const results = out;
  out = [];
  port!.postMessage({ t: 'done', results } satisfies FromThread);
}

function settled(id: number, r: SendResult): void {
  if (out.length === 0) setImmediate(flush);
  out.push([id, r.startedAt.getTime(), r.statusCode, r.durationMs, r.error, r.responseExcerpt, r.retryAfterMs, r.permanent, r.notStarted === true]);
}

function run(req: WireRequest, after?: (r: SendResult) => void): void {
  const [id, url, body, headers, timeoutMs] = req;
  sender.send({ url, body, headers, timeoutMs, signal: abort.signal }).then(
    (r) => {
      settled(id, r);
      after?.(r);
    },
    // send() resolves whatever happens; should it ever throw, the attempt still ends
    (err: unknown) => {
      const r = unsentAttempt(String((err as Error)?.message ?? err).slice(0, 500));
      settled(id, r);
      after?.(r);
    },
  );
}

/**
 * An attempt of a lane ended. A failure gives back what waits in the lane
 * unstarted: the dispatcher starts nothing more of the integration until the
 * failure's outcome is written and it knows whether the endpoint's circuit
 * breaker opened (dispatcher.worker.ts `unwrittenFailures`).
 */
function ended(lane: number, r: SendResult): void {
  if (!delivers(r.statusCode)) gate.drop(lane);
  gate.done(lane);
}

function send(req: WireRequest): void {
  const [id, , , , , lane, cap, startBy] = req;
  if (lane === NO_LANE) return run(req);
  gate.submit({ lane, cap, startBy, start: () => run(req, (r) => ended(lane, r)), skip: () => settled(id, notStarted()) });
}

port.on('message', (msg: ToThread) => {
  if (msg.t === 'send') for (const r of msg.reqs) send(r);
  else if (msg.t === 'drop') gate.drop(msg.lane ?? undefined);
  else if (msg.t === 'abort') {
    gate.drop();
    abort.abort();
  } else if (msg.t === 'close') {
    gate.drop();
    sender.close();
    port.close();
  }
});

port.postMessage({ t: 'ready' } satisfies FromThread);
