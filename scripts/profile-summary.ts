// Summarises V8 CPU profiles (.cpuprofile, e.g. from `npm run bench -- --cpu-prof`):
// self time by function, by file and by package, and inclusive time of the
// libraries the hot path goes through (koa, openapi-backend, ajv, pg, kysely,
// maxmind/geo, pino, prom-client, got, node:http …).
//
//   npx tsx scripts/profile-summary.ts [--bench RESULT.json [--scenario S [--round N]]]
//       [--skip S] [--until S] [--top N] [--json] FILE.cpuprofile...
//
// --bench keeps only the samples taken during the service's measured rounds,
// as that bench run recorded them (`service_windows`, on CLOCK_MONOTONIC, the
// clock V8 stamps samples with); --scenario narrows that to one scenario,
// --round to its Nth measured round (1-based: to compare early and late rounds).
// Without it, --skip S / --until S keep the samples taken S seconds after the
// profile started. Several files (one per worker or thread) are added up.
// Percentages are of the sampled time in the window ("all") and of the time
// the thread was not idle ("busy"). Lines are the running code's: under tsx
// our own files are transformed, so their functions are named without one.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** what koa and koa-bodyparser run on */
const KOA_DEPS = new Set([
  'delegates',
  'co-body',
  'raw-body',
  '@hapi/bourne',
  'inflation',
  'type-is',
  'content-type',
  'on-finished',
  'http-errors',
  'statuses',
  'accepts',
  'cookies',
  'fresh',
  'encodeurl',
  'vary',
  'only',
  'escape-html',
  'media-typer',
  'mime-types',
  'copy-to',
  'bytes',
  'iconv-lite',
  'ee-first',
]);

/** Library families reported inclusively: a sample counts once per family on its stack. */
const FAMILIES: Record<string, (group: string) => boolean> = {
  koa: (g) => g === 'koa' || g.startsWith('koa-') || g.startsWith('@koa/') || KOA_DEPS.has(g),
  'openapi-backend': (g) => g === 'openapi-backend' || g === 'bath-es5',
  ajv: (g) => g === 'ajv' || g === 'ajv-formats' || g === 'fast-uri' || g === '(ajv compiled validators)',
  pg: (g) => g === 'pg' || g.startsWith('pg-') || g.startsWith('postgres-'),
  kysely: (g) => g === 'kysely',
  'maxmind/geo': (g) => g === 'maxmind' || g === 'mmdb-lib' || g === 'src/geo/geo.service.ts',
  pino: (g) => g === 'pino' || g.startsWith('pino-') || g === 'sonic-boom' || g === 'thread-stream' || g === 'fast-redact',
  'prom-client': (g) => g === 'prom-client' || g === 'tdigest' || g === 'bintrees',
  got: (g) => g === 'got' || g.startsWith('@szmarczak/') || g.startsWith('@sindresorhus/') || g === 'cacheable-request',
  'node:http (core)': (g) =>
    g === 'node:_http_server' ||
    g === 'node:_http_outgoing' ||
    g === 'node:_http_common' ||
    g === 'node:_http_incoming' ||
    g === 'node:_http_client' ||
    g === 'node:http',
  'trackway src/': (g) => g.startsWith('src/'),
  tsx: (g) => g === 'tsx' || g === 'esbuild',
};

/** A frame's file, shortened: `pkg/path` for node_modules, `src/...` for ours, `node:...` for core. */
export function fileOf(url: string): string {
  if (!url) return '';
  let u = url.replace(/^file:\/\//, '').replace(/\?.*$/, '');
  const nm = u.lastIndexOf('/node_modules/');
  if (nm >= 0) return u.slice(nm + '/node_modules/'.length);
  if (u.startsWith(ROOT)) u = u.slice(ROOT.length);
  return u.startsWith('node:') ? u : u.replace(/^\/+/, '');
}

/** The package (or our file, or node core module) a frame belongs to. */
export function groupOf(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (!url) {
    if (/^validate\d+$/.test(functionName)) return '(ajv compiled validators)';
    if (functionName.startsWith('(')) return functionName; // (idle), (program), (garbage collector), (root)
    return '(native)';
  }
  const file = fileOf(url);
  if (url.includes('/node_modules/')) {
    const parts = file.split('/');
    return parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!;
  }
  if (file.startsWith('node:')) {
    const m = /^node:(?:internal\/)?([^/]+)/.exec(file);
    return file.startsWith('node:internal/') ? `node:internal/${m?.[1] ?? ''}` : `node:${m?.[1] ?? ''}`;
  }
  if (file.startsWith('src/')) return file;
  return file;
}

interface Totals {
  all: number;
  idle: number;
  byFunction: Map<string, number>;
  byFile: Map<string, number>;
  byGroup: Map<string, number>;
  inclusive: Map<string, number>;
  /** self time, native and node-core frames charged to the nearest package or file of ours above them */
  attributed: Map<string, number>;
}

const CORE = (g: string) => g.startsWith('node:') || g === '(native)' || g === '(ajv compiled validators)';

function add(m: Map<string, number>, k: string, v: number): void {
  m.set(k, (m.get(k) ?? 0) + v);
}

interface Window {
  start_us: number;
  end_us: number;
}

/** keep a sample at absolute time t (µs) taken rel seconds after its profile started? */
type Keep = (t: number, rel: number) => boolean;

function summarise(profiles: Profile[], keep: Keep): Totals {
  const t: Totals = { all: 0, idle: 0, byFunction: new Map(), byFile: new Map(), byGroup: new Map(), inclusive: new Map(), attributed: new Map() };
  for (const p of profiles) {
    const byId = new Map(p.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>();
    for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    const owners = new Map<number, string>(); // node id → the package or file its time is charged to (memoised)
    const ownerOf = (id: number): string => {
      let o = owners.get(id);
      if (o !== undefined) return o;
      const leaf = groupOf(byId.get(id)!.callFrame);
      o = leaf;
      if (CORE(leaf)) {
        for (let cur = parent.get(id); cur !== undefined; cur = parent.get(cur)) {
          const g = groupOf(byId.get(cur)!.callFrame);
          if (!CORE(g) && !g.startsWith('(')) {
            o = g;
            break;
          }
        }
      }
      const family = Object.entries(FAMILIES).find(([name, test]) => name !== 'trackway src/' && test(o!));
      o = family ? family[0] : o;
      owners.set(id, o);
      return o;
    };
    const families = new Map<number, string[]>(); // node id → families on its stack (memoised)
    const familiesOf = (id: number): string[] => {
      let f = families.get(id);
      if (f) return f;
      const set = new Set<string>();
      for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
        const g = groupOf(byId.get(cur)!.callFrame);
        for (const [name, test] of Object.entries(FAMILIES)) if (test(g)) set.add(name);
      }
      f = [...set];
      families.set(id, f);
      return f;
    };
    // sample i lasts until sample i+1 (the last one: the mean interval)
    const times: number[] = [];
    let at = p.startTime;
    for (const d of p.timeDeltas) times.push((at += d));
    const mean = times.length > 1 ? (times[times.length - 1]! - times[0]!) / (times.length - 1) : 0;
    for (let i = 0; i < p.samples.length; i++) {
      const rel = (times[i]! - p.startTime) / 1e6;
      if (!keep(times[i]!, rel)) continue;
      const dur = i + 1 < times.length ? times[i + 1]! - times[i]! : mean;
      const node = byId.get(p.samples[i]!)!;
      const f = node.callFrame;
      t.all += dur;
      if (f.functionName === '(idle)') {
        t.idle += dur;
        continue;
      }
      const file = fileOf(f.url);
      const line = f.lineNumber > 0 ? `:${f.lineNumber + 1}` : '';
      // a RegExp frame is named after its whole pattern
      const name = f.functionName.length > 80 ? f.functionName.slice(0, 77) + '...' : f.functionName || '(anonymous)';
      add(t.byFunction, `${name}${file ? ` ${file}${line}` : ''}`, dur);
      add(t.byFile, file || groupOf(f), dur);
      add(t.byGroup, groupOf(f), dur);
      for (const fam of familiesOf(node.id)) add(t.inclusive, fam, dur);
      add(t.attributed, ownerOf(node.id), dur);
    }
  }
  return t;
}

function top(m: Map<string, number>, n: number): [string, number][] {
  return [...m].sort((a, b) => b[1] - a[1]).slice(0, n);
}

function main(): void {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      bench: { type: 'string' },
      scenario: { type: 'string' },
      round: { type: 'string' },
      skip: { type: 'string', default: '0' },
      until: { type: 'string' },
      top: { type: 'string', default: '25' },
      json: { type: 'boolean', default: false },
    },
  });
  if (positionals.length === 0) {
    process.stderr.write('usage: npx tsx scripts/profile-summary.ts [--skip S] [--until S] [--top N] [--json] FILE.cpuprofile...\n');
    process.exit(2);
  }
  const profiles = positionals.map((f) => JSON.parse(fs.readFileSync(f, 'utf8')) as Profile);
  const n = Number(values.top);
  let keep: Keep;
  let what: string;
  if (values.bench) {
    const result = JSON.parse(fs.readFileSync(values.bench, 'utf8')) as { service_windows?: (Window & { scenario: string })[] };
    let windows = (result.service_windows ?? []).filter((w) => !values.scenario || w.scenario === values.scenario);
    if (values.round !== undefined) windows = windows.slice(Number(values.round) - 1, Number(values.round));
    if (windows.length === 0) throw new Error(`${values.bench} records no service rounds${values.scenario ? ` of ${values.scenario}` : ''}`);
    keep = (t) => windows.some((w) => t >= w.start_us && t <= w.end_us);
    what = `${windows.length} measured service round(s)${values.scenario ? ` of ${values.scenario}` : ''}${values.round ? `, round ${values.round}` : ''}`;
  } else {
    const skip = Number(values.skip);
    const until = values.until === undefined ? Infinity : Number(values.until);
    keep = (_t, rel) => rel >= skip && rel <= until;
    what = `from ${skip} s${until < Infinity ? ` to ${until} s` : ''} after the start`;
  }
  const t = summarise(profiles, keep);
  if (t.all === 0) throw new Error('no samples in the window (are these the profiles of that run?)');
  const busy = t.all - t.idle;
  const pct = (us: number) => `${((100 * us) / t.all).toFixed(1).padStart(5)} % all  ${((100 * us) / busy).toFixed(1).padStart(5)} % busy`;
  const ms = (us: number) => `${(us / 1000).toFixed(0).padStart(7)} ms`;
  if (values.json) {
    const obj = (m: Map<string, number>, k = n) => Object.fromEntries(top(m, k).map(([key, us]) => [key, Math.round(us / 1000)]));
    process.stdout.write(
      JSON.stringify(
        {
          files: positionals.map((f) => path.basename(f)),
          window_ms: Math.round(t.all / 1000),
          idle_ms: Math.round(t.idle / 1000),
          self_by_function_ms: obj(t.byFunction),
          self_by_file_ms: obj(t.byFile),
          self_by_package_ms: obj(t.byGroup),
          inclusive_ms: obj(t.inclusive, Infinity),
          attributed_self_ms: obj(t.attributed),
        },
        null,
        2,
      ) + '\n',
    );
    return;
  }
  const out: string[] = [];
  out.push(
    `${positionals.length} profile(s), ${what}: ${(t.all / 1e6).toFixed(1)} s of samples; idle ${((100 * t.idle) / t.all).toFixed(1)} %, busy ${(busy / 1e6).toFixed(1)} s`,
  );
  out.push('', `top ${n} self time by function:`);
  for (const [k, us] of top(t.byFunction, n)) out.push(`${ms(us)} ${pct(us)}  ${k}`);
  out.push('', `top ${n} self time by file:`);
  for (const [k, us] of top(t.byFile, n)) out.push(`${ms(us)} ${pct(us)}  ${k}`);
  out.push('', `self time by package / our file (top ${n}):`);
  for (const [k, us] of top(t.byGroup, n)) out.push(`${ms(us)} ${pct(us)}  ${k}`);
  out.push('', `self time with the native and node-core work each one called charged to it (top ${n}; libraries grouped as below):`);
  for (const [k, us] of top(t.attributed, n)) out.push(`${ms(us)} ${pct(us)}  ${k}`);
  out.push('', 'inclusive time (a sample counts once per library on its stack):');
  for (const name of Object.keys(FAMILIES)) {
    const us = t.inclusive.get(name) ?? 0;
    out.push(`${ms(us)} ${pct(us)}  ${name}`);
  }
  process.stdout.write(out.join('\n') + '\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) main();
