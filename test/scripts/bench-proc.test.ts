// The bench's RSS report per scenario and process role (scripts/bench-proc.ts,
// scripts/bench-report.ts): a cluster worker is named by its NODE_UNIQUE_ID,
// each scenario keeps its own peaks, and the line names them.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { expect } from 'chai';
import { RssPeak, processRole, readStat } from '../../scripts/bench-proc.ts';
import { rssLine } from '../../scripts/bench-report.ts';

/** a node child that idles until killed, with `env` added */
async function idler(env: Record<string, string>): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['-e', 'process.stdout.write("up"); setInterval(() => {}, 1000)'], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await once(child.stdout, 'data');
  return child;
}

describe('bench RSS per scenario and process role', () => {
  const children: ChildProcess[] = [];
  after(() => children.forEach((c) => c.kill('SIGKILL')));

  it('names the root primary, a cluster worker by its NODE_UNIQUE_ID, anything else by its comm', async () => {
    const worker = await idler({ NODE_UNIQUE_ID: '2' });
    const plain = await idler({});
    children.push(worker, plain);
    expect(processRole(readStat(worker.pid!)!, worker.pid!)).to.equal('primary');
    expect(processRole(readStat(worker.pid!)!, process.pid)).to.equal('worker 2');
    expect(processRole(readStat(plain.pid!)!, process.pid)).to.equal('node');
  });

  it('keeps each scenario’s peak per role, the primary first and workers in number order', async () => {
    const w10 = await idler({ NODE_UNIQUE_ID: '10' });
    const w9 = await idler({ NODE_UNIQUE_ID: '9' });
    children.push(w10, w9);
    // this test process is the root: its two children are the workers
    const peak = new RssPeak(process.pid, { exclude: (p) => p.pid !== w10.pid && p.pid !== w9.pid });
    peak.scenario = 'view';
    peak.sample();
    peak.scenario = 'dispatch';
    peak.sample();
    const by = peak.peaksByScenario();
    expect(Object.keys(by)).to.deep.equal(['view', 'dispatch']);
    expect(Object.keys(by.view!)).to.deep.equal(['primary', 'worker 9', 'worker 10']);
    const rss9 = readStat(w9.pid!)!.rssBytes / 2 ** 20;
    expect(by.dispatch!['worker 9']).to.be.within(Math.round(rss9 * 0.5), Math.round(rss9 * 1.5));
    expect(peak.processes).to.equal(3);
    expect(Math.round(peak.maxMb)).to.equal(Math.max(...Object.values(by.view!), ...Object.values(by.dispatch!)));
  });

  it('prints one line per run and the peaks per scenario', () => {
    const text = rssLine({
      idle_sum_mb: 334,
      peak_sum_mb: 599,
      peak_largest_process_mb: 319,
      processes: 3,
      by_scenario: { view: { primary: 61, 'worker 1': 250, 'worker 2': 240 }, dispatch: { primary: 61, 'worker 1': 319, 'worker 2': 245 } },
    });
    expect(text).to.equal(
      'service peak RSS during its rounds: **599 MB** summed over 3 processes, largest single process 319 MB (idle after start: 334 MB)\n' +
        'peak RSS per scenario, MB (a process keeps what earlier scenarios grew it to): view: primary 61, worker 1 250, worker 2 240; ' +
        'dispatch: primary 61, worker 1 319, worker 2 245',
    );
  });
});
