// Inclusive time by function in one V8 CPU profile, during one bench run's
// measured service rounds (as scripts/profile-summary.ts selects them): what
// the dispatcher's time goes through, e.g. got's request setup, our attempt(),
// the claim and outcome queries.
//   npx tsx scripts/profile-inclusive.ts --bench RESULT.json [--scenario dispatch] [--top N] [--match REGEX] FILE.cpuprofile
import fs from 'node:fs';
import { parseArgs } from 'node:util';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

const { values, positionals } = parseArgs({
  options: {
    bench: { type: 'string' },
    scenario: { type: 'string', default: 'dispatch' },
    top: { type: 'string', default: '45' },
    match: { type: 'string' },
  },
  allowPositionals: true,
});
const profile = JSON.parse(fs.readFileSync(positionals[0]!, 'utf8')) as Profile;
const bench = values.bench
  ? (JSON.parse(fs.readFileSync(values.bench, 'utf8')) as { service_windows: { scenario: string; start_us: number; end_us: number }[] })
  : undefined;
const windows = bench?.service_windows.filter((w) => w.scenario === values.scenario);
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const label = (n: Node) => {
  const url = n.callFrame.url.replace(/.*node_modules\//, '').replace(/^file:\/\/.*?\/(dist\/src|src)\//, '$1/');
  return `${n.callFrame.functionName || '(anonymous)'} ${url}:${n.callFrame.lineNumber + 1}`;
};
let t = profile.startTime;
let total = 0;
let idle = 0;
const inclusive = new Map<string, number>();
profile.samples.forEach((id, i) => {
  t += profile.timeDeltas[i]!;
  const dt = profile.timeDeltas[i + 1] ?? 0;
  if (windows && !windows.some((w) => t >= w.start_us && t <= w.end_us)) return;
  total += dt;
  if (byId.get(id)!.callFrame.functionName === '(idle)') {
    idle += dt;
    return;
  }
  const seen = new Set<string>();
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
    const k = label(byId.get(at)!);
    if (!seen.has(k)) inclusive.set(k, (inclusive.get(k) ?? 0) + dt);
    seen.add(k);
  }
});
const busy = total - idle;
console.log(`${(total / 1000).toFixed(0)} ms sampled, ${(idle / 1000).toFixed(0)} ms idle; inclusive % of busy time:`);
const match = values.match ? new RegExp(values.match) : undefined;
[...inclusive]
  .filter(([k]) => !match || match.test(k))
  .sort((a, b) => b[1] - a[1])
  .slice(0, Number(values.top))
  .forEach(([k, us]) => console.log(`${(us / 1000).toFixed(0).padStart(7)} ms ${((100 * us) / busy).toFixed(1).padStart(5)} %  ${k}`));
