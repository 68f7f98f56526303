// `npm run build`: the production build, also run by `npm ci` (the `prepare`
// script) and by `npm start` when dist/ is missing or stale.
//   1. tsc (tsconfig.build.json) compiles src/ to dist/src/, turning the `.ts`
//      import specifiers into `.js` (rewriteRelativeImportExtensions); type
//      checking is `npm run typecheck`'s job, so the build only emits.
//   2. esbuild bundles the browser tracker and the dashboard into dist/assets/
//      with their gzip copies (src/http/prebuilt-assets.ts); the compiled
//      server reads them at start and never loads esbuild.
//   3. the official client, `trackway/client`, into dist/client/
//      (scripts/build-client.ts: esbuild, and tsc for its declarations).
//   4. the default geo data (DB-IP mmdb) is turned into a ranges file in
//      node_modules/.cache/trackway-geo/ (src/geo/geo.service.ts), once per
//      version of the data: 20–50 s the first time, nothing afterwards.
//   5. dist/build.json records the signature of the sources it was built
//      from (scripts/build-state.js), which `npm start` compares.
// Everything is built into a staging directory that replaces dist/ at the end,
// so a failed build leaves the previous one (and no half-written dist/).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { writePrebuiltAssets } from '../src/http/prebuilt-assets.ts';
import { buildDashboard } from '../src/dashboard/bundle.ts';
import { buildTracker, TRACKER_GZIP_LIMIT } from '../src/tracking/tracker-bundle.service.ts';
import { PACKAGE_VERSION } from '../src/project.ts';
import { prepareGeoRanges } from '../src/geo/geo.service.ts';
import { buildClient } from './build-client.ts';
import { DIST, ROOT, signatureOf, sourceEntries } from './build-state.js';

class BuildError extends Error {}

function compile(outDir: string): void {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const r = spawnSync(process.execPath, [tsc, '-p', path.join(ROOT, 'tsconfig.build.json'), '--outDir', outDir], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  if (r.status !== 0) throw new BuildError(`tsc failed (${r.error?.message ?? `exit ${r.status ?? r.signal}`})`);
}

async function main(): Promise<void> {
  const started = Date.now();
  // read before compiling: a source edited during the build leaves dist/ stale
  const entries = sourceEntries(ROOT);
  const staging = path.join(ROOT, `dist.build-${process.pid}`);
  fs.rmSync(staging, { recursive: true, force: true });
  try {
    compile(staging);
    const [tracker, dashboard] = await Promise.all([buildTracker(), buildDashboard(), buildClient(ROOT, path.join(staging, 'client'))]);
    if (tracker.gzipBytes > TRACKER_GZIP_LIMIT) {
      throw new BuildError(`the tracker is ${tracker.gzipBytes} bytes gzipped, over the ${TRACKER_GZIP_LIMIT}-byte limit`);
    }
    writePrebuiltAssets(path.join(staging, 'assets'), { tracker, dashboard });
    const stamp = { signature: signatureOf(entries), entries, version: PACKAGE_VERSION, builtAt: new Date().toISOString(), node: process.version };
    fs.writeFileSync(path.join(staging, 'build.json'), JSON.stringify(stamp, null, 2) + '\n');
    // swap: the old dist/ is moved aside first, so dist/ is never a mix of two builds
    const old = `${DIST}.old-${process.pid}`;
    if (fs.existsSync(DIST)) fs.renameSync(DIST, old);
    fs.renameSync(staging, DIST);
    fs.rmSync(old, { recursive: true, force: true });
    // the default geo data as a ranges file (kept in node_modules/.cache across builds; built once per data version)
    const geoStarted = Date.now();
    let geoNote = '';
    try {
      const geo = prepareGeoRanges(undefined);
      const took = Date.now() - geoStarted > 1000 ? ` built in ${((Date.now() - geoStarted) / 1000).toFixed(1)} s` : '';
      if (geo) geoNote = `; geo ranges ${path.relative(ROOT, geo)}${took}`;
    } catch (err) {
      // not fatal: the service builds it into its data directory at the first start
      geoNote = `; geo ranges not built here (${(err as Error).message})`;
    }
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    process.stdout.write(`trackway: built dist/ in ${seconds} s (tracker.js ${tracker.gzipBytes} bytes gzipped)${geoNote}\n`);
  } catch (e) {
    fs.rmSync(staging, { recursive: true, force: true });
    throw e;
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`trackway: the build failed: ${err instanceof BuildError ? err.message : ((err as Error)?.stack ?? String(err))}\n`);
  process.exit(1);
});
