// The sending thread's own cap per integration (sender-thread.worker.ts):
// the dispatcher may hand a fast integration's next attempts to the thread
// before a request slot is free (dispatcher.worker.ts `handoff`), and the
// thread starts each one as soon as one of that integration's requests
// ends, without waiting for the dispatcher's thread to hear of it and send
// the next. The cap itself stays the dispatcher's (fair-share.rules.ts
// laneLimit): each request carries it, and the latest one a lane was given
// is the one applied. An attempt whose lease would not last until its
// timeout is not started (`startBy`); nor is one of a lane that is dropped
// (its endpoint's breaker opened, the dispatcher is stopping): the
// dispatcher gives those back unattempted.

export interface Gated {
  /** the integration */
  lane: number;
  /** requests the lane may have in flight */
  cap: number;
  /** not started after this time (ms since the epoch) */
  startBy: number;
  start(): void;
  /** it will not start: given back to the dispatcher unattempted */
  skip(): void;
}

interface GateLane {
  running: number;
  cap: number;
  queue: Gated[];
}

export class LaneGate {
  private readonly lanes = new Map<number, GateLane>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Starts the attempt now if its lane has a free slot, else queues it behind the lane's others. */
  submit(item: Gated): void {
    let lane = this.lanes.get(item.lane);
    if (!lane) {
      lane = { running: 0, cap: item.cap, queue: [] };
      this.lanes.set(item.lane, lane);
    }
    lane.cap = item.cap;
    lane.queue.push(item);
    this.pull(item.lane, lane);
  }

  /** One of the lane's attempts ended: the next ones may start. */
  done(laneKey: number): void {
    const lane = this.lanes.get(laneKey);
    if (!lane) return;
    lane.running--;
    this.pull(laneKey, lane);
  }

  /** Skips what waits in the lane (every lane when none is named); attempts in flight go on. */
  drop(laneKey?: number): void {
    const keys = laneKey === undefined ? [...this.lanes.keys()] : [laneKey];
    for (const key of keys) {
      const lane = this.lanes.get(key);
      if (!lane) continue;
      const waiting = lane.queue.splice(0);
      this.forget(key, lane);
      for (const item of waiting) item.skip();
    }
  }

  /** attempts waiting for a slot, all lanes */
  waiting(): number {
    let n = 0;
    for (const lane of this.lanes.values()) n += lane.queue.length;
    return n;
  }

  private pull(key: number, lane: GateLane): void {
    while (lane.running < lane.cap && lane.queue.length > 0) {
      const item = lane.queue.shift()!;
      if (this.now() > item.startBy) {
        item.skip();
        continue;
      }
      lane.running++;
      item.start();
    }
    this.forget(key, lane);
  }

  private forget(key: number, lane: GateLane): void {
    if (lane.running <= 0 && lane.queue.length === 0) this.lanes.delete(key);
  }
}
