// Is dist/ a build of the sources as they are now? Plain JavaScript, so that
// `npm start` (scripts/start.js) and `npx trackway` (scripts/trackway.js) can
// ask before anything is compiled. The answer compares a signature of the
// inputs (path, size and mtime of every file under src/ and generated/, and of
// package.json, the lock file, the tsconfigs and the build scripts: about 130
// stat calls, a few milliseconds) with the one the last build recorded in
// dist/build.json. A file added, removed, edited or restored with an older
// mtime changes it.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const DIST = path.join(ROOT, 'dist');
export const STAMP = path.join(DIST, 'build.json');
/** the compiled CLI */
export const DIST_MAIN = path.join(DIST, 'src', 'main.js');

const WATCHED_DIRS = ['src', 'generated'];
const WATCHED_FILES = [
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  'tsconfig.build.json',
  'tsconfig.client.json',
  'scripts/build.ts',
  'scripts/build-client.ts',
  'scripts/build-state.js',
];

/**
 * @param {string} root
 * @param {string} rel
 * @param {string[]} out
 */
function walk(root, rel, out) {
  let entries;
  try {
    entries = fs.readdirSync(path.join(root, rel), { withFileTypes: true });
  } catch {
    out.push(`${rel}\tmissing`);
    return;
  }
  for (const e of entries) {
    const child = `${rel}/${e.name}`;
    if (e.isDirectory()) walk(root, child, out);
    else out.push(entry(root, child));
  }
}

/**
 * @param {string} root
 * @param {string} rel
 */
function entry(root, rel) {
  try {
    const st = fs.statSync(path.join(root, rel));
    return `${rel}\t${st.size}\t${Math.trunc(st.mtimeMs)}`;
  } catch {
    return `${rel}\tmissing`;
  }
}

/**
 * What the build reads, one line per file (`path size mtime`), sorted.
 * @param {string} [root]
 * @returns {string[]}
 */
export function sourceEntries(root = ROOT) {
  /** @type {string[]} */
  const out = [];
  for (const dir of WATCHED_DIRS) walk(root, dir, out);
  for (const file of WATCHED_FILES) out.push(entry(root, file));
  return out.sort();
}

/** @param {string[]} entries */
export function signatureOf(entries) {
  return createHash('sha256').update(entries.join('\n')).digest('hex');
}

/**
 * @typedef {{ signature: string, entries: string[], version: string, builtAt: string, node: string }} Stamp
 * @typedef {{ fresh: boolean, reason: string }} BuildState
 */

/**
 * @param {string} [root]
 * @returns {BuildState}
 */
export function buildState(root = ROOT) {
  const dist = path.join(root, 'dist');
  /** @type {Stamp} */
  let stamp;
  try {
    stamp = JSON.parse(fs.readFileSync(path.join(dist, 'build.json'), 'utf8'));
  } catch {
    return { fresh: false, reason: 'there is no build yet' };
  }
  if (!fs.existsSync(path.join(dist, 'src', 'main.js'))) return { fresh: false, reason: 'dist/src/main.js is missing' };
  const now = sourceEntries(root);
  if (signatureOf(now) === stamp.signature) return { fresh: true, reason: 'up to date' };
  const before = new Set(stamp.entries ?? []);
  const changed = now.find((e) => !before.has(e))?.split('\t')[0];
  const removed = (stamp.entries ?? []).find((e) => !now.includes(e))?.split('\t')[0];
  return { fresh: false, reason: `${changed ?? removed ?? 'a source'} changed since the last build` };
}

/**
 * Builds dist/ when it is missing or stale (`npm start`); exits when the build fails.
 * @param {(line: string) => void} say
 */
export function ensureBuilt(say) {
  const state = buildState();
  if (state.fresh) return;
  say(`building dist/ first: ${state.reason}`);
  const r = spawnSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'scripts', 'build.ts')], { cwd: ROOT, stdio: 'inherit' });
  if (r.status !== 0) {
    say(`the build failed (${r.error?.message ?? `exit ${r.status ?? r.signal}`}); not starting`);
    process.exit(1);
  }
}
