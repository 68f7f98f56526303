// A webhook receiver for tests: a node:http server on 127.0.0.1 that
// captures every request (headers and raw body) and answers what the test
// tells it to, including slowly, or never (held open until close()).
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** Date.now() when the body had arrived */
  at: number;
}

export interface Reply {
  status: number;
  body?: string;
  headers?: Record<string, string>;
  /** answer after this many milliseconds */
  delayMs?: number;
  /** do not answer until releaseHeld() (or close(), which drops the connection) */
  hold?: boolean;
}

/** Decides the reply to a request; `index` counts requests from 0. */
export type Responder = (req: ReceivedRequest, index: number) => Reply;

export class TestReceiver {
  readonly requests: ReceivedRequest[] = [];
  private waiters: { count: number; resolve: () => void }[] = [];
  private timers = new Set<NodeJS.Timeout>();
  private held: http.ServerResponse[] = [];

  private constructor(
    private readonly server: http.Server,
    readonly url: string,
    private responder: Responder,
  ) {}

  static async start(responder: Responder = () => ({ status: 204 })): Promise<TestReceiver> {
    // eslint-disable-next-line prefer-const -- assigned below, once the server it captures exists
    let self!: TestReceiver;
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => self.handle(req, res, Buffer.concat(chunks).toString('utf8')));
    });
    server.keepAliveTimeout = 5_000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    self = new TestReceiver(server, `http://127.0.0.1:${port}/hook`, responder);
    return self;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** Replaces how later requests are answered. */
  respond(responder: Responder): void {
    this.responder = responder;
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse, body: string): void {
    const received: ReceivedRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body, at: Date.now() };
    const index = this.requests.push(received) - 1;
    for (const w of this.waiters.filter((w) => this.requests.length >= w.count)) w.resolve();
    this.waiters = this.waiters.filter((w) => this.requests.length < w.count);
    const reply = this.responder(received, index);
    if (reply.hold) {
      this.held.push(res);
      return;
    }
    const send = () => {
      if (res.destroyed) return;
      res.writeHead(reply.status, reply.headers);
      res.end(reply.body ?? '');
    };
    if (reply.delayMs) {
      const t = setTimeout(() => {
        this.timers.delete(t);
        send();
      }, reply.delayMs);
      this.timers.add(t);
    } else send();
  }

  /** Requests held and not yet answered (whose connection is still open). */
  get holding(): number {
    return this.held.filter((r) => !r.destroyed && !r.writableEnded).length;
  }

  /** Answers every held request with `reply`. */
  releaseHeld(reply: Omit<Reply, 'hold' | 'delayMs'> = { status: 200 }): void {
    for (const res of this.held.splice(0)) {
      if (res.destroyed) continue;
      res.writeHead(reply.status, reply.headers);
      res.end(reply.body ?? '');
    }
  }

  /** Resolves once `count` requests in all have arrived; rejects after `timeoutMs`. */
  waitFor(count: number, timeoutMs = 10_000): Promise<ReceivedRequest[]> {
    if (this.requests.length >= count) return Promise.resolve(this.requests.slice());
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`the receiver got ${this.requests.length} of ${count} requests within ${timeoutMs} ms`)),
        timeoutMs,
      );
      this.waiters.push({
        count,
        resolve: () => {
          clearTimeout(timer);
          resolve(this.requests.slice());
        },
      });
    });
  }

  async close(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
