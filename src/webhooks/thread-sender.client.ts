// The dispatcher's sender on a thread of its own: the same attempts as
// sender.client.ts (which runs them there, sender-thread.worker.ts), while
// the dispatcher's thread claims, signs, keeps the fair share and writes
// outcomes. got and node:http are most of an attempt's CPU (BENCHMARKS.md,
// sixteenth stop): on one thread the dispatcher's own work came on top of
// them; on two, it runs beside them where a core is free.
//
// Requests and results cross as arrays (structured clone), gathered per
// turn of each thread's event loop. A request may come before its
// integration has a free slot (Sender.drop): the thread applies the
// integration's cap itself (lane-gate.rules.ts), so a fast endpoint's next
// attempt starts as the last one ends instead of a round trip between the
// threads later. If the thread dies, the attempts it
// held end with an error (retried like a network error) and the next send
// starts a new thread.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { INTERRUPTED_ERROR, type SendRequest, type SendResult, type Sender, type SenderOptions, notStarted, unsentAttempt } from './sender.client.ts';

/** [id, url, body, headers, timeoutMs, lane (NO_LANE: start at once), cap, startBy ms] */
export type WireRequest = [number, string, string, Record<string, string>, number, number, number, number];
/** [id, startedAt ms, statusCode, durationMs, error, responseExcerpt, retryAfterMs, permanent, notStarted] */
export type WireResult = [number, number, number | null, number, string | null, string | null, number | null, boolean, boolean];
export type ToThread = { t: 'send'; reqs: WireRequest[] } | { t: 'drop'; lane: number | null } | { t: 'abort' } | { t: 'close' };
/** a request without a lane: started as soon as it arrives */
export const NO_LANE = -1;
export type FromThread = { t: 'ready' } | { t: 'done'; results: WireResult[] };

/** run through tsx (tests, `npm run dev`) rather than compiled */
const TYPESCRIPT = import.meta.url.endsWith('.ts');
/** the thread's entry beside this file */
const ENTRY = new URL(`./sender-thread.worker${TYPESCRIPT ? '.ts' : '.js'}`, import.meta.url);

/**
 * The thread's young generation, in MB. Its garbage is got's per-request
 * objects (about 57 KB a request), all but the few requests in flight dead
 * at each scavenge, so a small young generation costs few, short scavenges;
 * V8's default (16 MB semi-spaces) added about 23 MB more to the process's
 * RSS in the bench's dispatch rounds (208 against 185 MB; the target is 256).
 */
const THREAD_LIMITS = { maxYoungGenerationSizeMb: 8 };

/**
 * A worker thread running ENTRY. Node 20 does not apply `--import tsx` to a
 * worker's entry, so through tsx the thread registers tsx's loader first
 * and then imports the TypeScript entry.
 */
function startThread(workerData: unknown): Worker {
  if (!TYPESCRIPT) return new Worker(ENTRY, { workerData, resourceLimits: THREAD_LIMITS });
  // tsx's ESM API (its `import` export: this file may itself be loaded as CommonJS, whose resolve gives the other)
  const manifest = createRequire(import.meta.url).resolve('tsx/package.json');
  const api = (JSON.parse(fs.readFileSync(manifest, 'utf8')) as { exports: Record<string, { import: { default: string } }> }).exports['./esm/api']!
    .import.default;
  const tsx = pathToFileURL(path.join(path.dirname(manifest), api)).href;
  const code = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(ENTRY.href)}); })`;
  return new Worker(code, { eval: true, workerData, resourceLimits: THREAD_LIMITS });
}

export const THREAD_STOPPED_ERROR = 'the sending thread stopped before the endpoint answered';

/** `onThreadError`: the thread failed (its attempts end with THREAD_STOPPED_ERROR; the next send starts another) */
export function createThreadSender(opts: SenderOptions, onThreadError?: (err: unknown) => void): Sender {
  let worker: Worker | undefined;
  /** the current thread has loaded (or failed to) */
  let loaded: Promise<void> = Promise.resolve();
  let closed = false;
  let nextId = 1;
  const pending = new Map<number, (r: SendResult) => void>();
  let queued: WireRequest[] = [];
  /** signals already listened to: an abort of any of them interrupts the thread's attempts */
  const signals = new WeakSet<AbortSignal>();

  function failAll(error: string): void {
    const waiting = [...pending.values()];
    pending.clear();
    for (const resolve of waiting) resolve(unsentAttempt(error));
  }

  function thread(): Worker {
    if (worker) return worker;
    const w = startThread({ options: opts });
    w.unref();
    let onLoaded = () => {};
    loaded = new Promise<void>((resolve) => (onLoaded = resolve));
    w.on('message', (msg: FromThread) => {
      if (msg.t === 'ready') return onLoaded();
      for (const [id, startedAt, statusCode, durationMs, error, responseExcerpt, retryAfterMs, permanent, skipped] of msg.results) {
        const resolve = pending.get(id);
        if (!resolve) continue;
        pending.delete(id);
        if (skipped) resolve(notStarted());
        else resolve({ startedAt: new Date(startedAt), statusCode, durationMs, error, responseExcerpt, retryAfterMs, permanent });
      }
    });
    const gone = () => {
      onLoaded();
      if (worker !== w) return;
      worker = undefined;
      failAll(THREAD_STOPPED_ERROR);
    };
    w.on('error', (err) => {
      onThreadError?.(err);
      gone();
    });
    w.on('exit', gone);
    worker = w;
    return w;
  }

  function flush(): void {
    const reqs = queued;
    queued = [];
    if (reqs.length > 0) thread().postMessage({ t: 'send', reqs } satisfies ToThread);
  }

  // started now, not at the first attempt: loading got on a new thread takes a while
  thread();
  return {
    send(req: SendRequest): Promise<SendResult> {
      if (closed) return Promise.resolve(unsentAttempt(THREAD_STOPPED_ERROR));
      const signal = req.signal;
      if (signal?.aborted) return Promise.resolve(unsentAttempt(INTERRUPTED_ERROR));
      if (signal && !signals.has(signal)) {
        signals.add(signal);
        signal.addEventListener('abort', () => worker?.postMessage({ t: 'abort' } satisfies ToThread), { once: true });
      }
      const id = nextId++;
      return new Promise<SendResult>((resolve) => {
        pending.set(id, resolve);
        if (queued.length === 0) queueMicrotask(flush);
        const lane = req.lane;
        queued.push([id, req.url, req.body, req.headers, req.timeoutMs, lane?.key ?? NO_LANE, lane?.cap ?? 0, lane?.startBy ?? 0]);
      });
    },
    ready(): Promise<void> {
      return loaded;
    },
    drop(lane?: number): void {
      // after what was queued on this side: those are sent first, then dropped if still waiting
      flush();
      worker?.postMessage({ t: 'drop', lane: lane ?? null } satisfies ToThread);
    },
    close(): void {
      closed = true;
      const w = worker;
      worker = undefined;
      failAll(THREAD_STOPPED_ERROR);
      if (w) {
        w.postMessage({ t: 'close' } satisfies ToThread);
        // the thread ends once its agents are closed; a stuck one is stopped
        setTimeout(() => void w.terminate(), 1_000).unref();
      }
    },
  };
}
