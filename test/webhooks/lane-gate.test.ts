// The sending thread's cap per integration (lane-gate.rules.ts) without a
// thread: what starts when, what is skipped, and that a lane's cap is never
// exceeded however many of its attempts are handed over.
import { expect } from 'chai';
import { type Gated, LaneGate } from '../../src/webhooks/lane-gate.rules.ts';

interface Probe {
  started: string[];
  skipped: string[];
  running: Map<number, number>;
  peak: Map<number, number>;
}

function probe(): Probe {
  return { started: [], skipped: [], running: new Map(), peak: new Map() };
}

function item(p: Probe, name: string, lane: number, cap: number, startBy = Infinity): Gated {
  return {
    lane,
    cap,
    startBy,
    start: () => {
      p.started.push(name);
      const n = (p.running.get(lane) ?? 0) + 1;
      p.running.set(lane, n);
      p.peak.set(lane, Math.max(p.peak.get(lane) ?? 0, n));
    },
    skip: () => p.skipped.push(name),
  };
}

function end(gate: LaneGate, p: Probe, lane: number): void {
  p.running.set(lane, (p.running.get(lane) ?? 0) - 1);
  gate.done(lane);
}

describe('the sending thread’s lane gate', () => {
  it('starts a lane’s attempts up to its cap and each next one as one ends, in order', () => {
    const gate = new LaneGate();
    const p = probe();
    for (let i = 0; i < 5; i++) gate.submit(item(p, `a${i}`, 1, 2));
    expect(p.started).to.deep.equal(['a0', 'a1']);
    expect(gate.waiting()).to.equal(3);
    end(gate, p, 1);
    expect(p.started).to.deep.equal(['a0', 'a1', 'a2']);
    end(gate, p, 1);
    end(gate, p, 1);
    expect(p.started).to.deep.equal(['a0', 'a1', 'a2', 'a3', 'a4']);
    expect(p.peak.get(1)).to.equal(2);
    expect(gate.waiting()).to.equal(0);
  });

  it('keeps lanes apart: one lane’s full cap does not hold another back', () => {
    const gate = new LaneGate();
    const p = probe();
    for (let i = 0; i < 3; i++) gate.submit(item(p, `a${i}`, 1, 1));
    gate.submit(item(p, 'b0', 2, 1));
    expect(p.started).to.deep.equal(['a0', 'b0']);
  });

  it('applies the latest cap a lane was given', () => {
    const gate = new LaneGate();
    const p = probe();
    for (let i = 0; i < 4; i++) gate.submit(item(p, `a${i}`, 1, 4));
    // the endpoint turned slow: the dispatcher's next handover says 1
    gate.submit(item(p, 'a4', 1, 1));
    for (let i = 0; i < 4; i++) end(gate, p, 1);
    expect(p.started).to.deep.equal(['a0', 'a1', 'a2', 'a3', 'a4']);
    gate.submit(item(p, 'a5', 1, 1));
    expect(p.started).to.have.length(5);
    end(gate, p, 1);
    expect(p.started).to.include('a5');
  });

  it('skips an attempt whose start-by time passed while it waited', () => {
    let now = 1_000;
    const gate = new LaneGate(() => now);
    const p = probe();
    gate.submit(item(p, 'a0', 1, 1, 2_000));
    gate.submit(item(p, 'late', 1, 1, 1_500));
    gate.submit(item(p, 'a2', 1, 1, 5_000));
    now = 1_600;
    end(gate, p, 1);
    expect(p.skipped).to.deep.equal(['late']);
    expect(p.started).to.deep.equal(['a0', 'a2']);
  });

  it('drops what waits in one lane, or in all, and leaves what runs alone', () => {
    const gate = new LaneGate();
    const p = probe();
    for (let i = 0; i < 3; i++) gate.submit(item(p, `a${i}`, 1, 1));
    for (let i = 0; i < 3; i++) gate.submit(item(p, `b${i}`, 2, 1));
    gate.drop(1);
    expect(p.skipped).to.deep.equal(['a1', 'a2']);
    end(gate, p, 1);
    expect(p.started).to.deep.equal(['a0', 'b0']);
    gate.drop();
    expect(p.skipped).to.deep.equal(['a1', 'a2', 'b1', 'b2']);
    end(gate, p, 2);
    expect(gate.waiting()).to.equal(0);
    // a lane used again after a drop starts afresh
    gate.submit(item(p, 'a3', 1, 1));
    expect(p.started).to.include('a3');
  });
});
