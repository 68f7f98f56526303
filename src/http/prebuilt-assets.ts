// The browser assets as `npm run build` leaves them in dist/assets/: the
// tracker and the dashboard's hashed files, each with its gzip copy, and a
// manifest naming them (with the tracker's ETag). The compiled server reads
// them at start and never runs esbuild; under tsx they are bundled in memory
// instead (tracking/tracker-bundle.service.ts, dashboard/bundle.ts).
import fs from 'node:fs';
import path from 'node:path';
import { DIST_DIR } from '../project.ts';

export const ASSETS_DIR = path.join(DIST_DIR, 'assets');
const MANIFEST = 'manifest.json';

export interface PrebuiltFile {
  /** file name (a dashboard asset's carries its content hash) */
  name: string;
  type: string;
  body: Buffer;
  gzip: Buffer;
}

interface Manifest {
  tracker: { name: string; etag: string };
  dashboard: { script: string; style: string; files: { name: string; type: string }[] };
}

export interface PrebuiltAssets {
  tracker: { code: string; gzip: Buffer; etag: string };
  dashboard: { script: string; style: string; files: PrebuiltFile[] };
}

function writeWithGzip(dir: string, name: string, body: Buffer, gzip: Buffer): void {
  fs.writeFileSync(path.join(dir, name), body);
  fs.writeFileSync(path.join(dir, `${name}.gz`), gzip);
}

/** Writes the assets into `dir` (the build's staging copy of dist/assets/). */
export function writePrebuiltAssets(dir: string, assets: PrebuiltAssets): void {
  fs.mkdirSync(path.join(dir, 'dashboard'), { recursive: true });
  const { tracker, dashboard } = assets;
  writeWithGzip(dir, 'tracker.js', Buffer.from(tracker.code, 'utf8'), tracker.gzip);
  for (const f of dashboard.files) writeWithGzip(path.join(dir, 'dashboard'), f.name, f.body, f.gzip);
  const manifest: Manifest = {
    tracker: { name: 'tracker.js', etag: tracker.etag },
    dashboard: { script: dashboard.script, style: dashboard.style, files: dashboard.files.map(({ name, type }) => ({ name, type })) },
  };
  fs.writeFileSync(path.join(dir, MANIFEST), JSON.stringify(manifest, null, 2) + '\n');
}

function readManifest(dir: string): Manifest {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, MANIFEST), 'utf8')) as Manifest;
  } catch (e) {
    throw new Error(`the prebuilt browser assets are missing from ${dir} (${(e as Error).message}); run \`npm run build\``);
  }
}

export function readPrebuiltTracker(dir = ASSETS_DIR): PrebuiltAssets['tracker'] {
  const { tracker } = readManifest(dir);
  return {
    code: fs.readFileSync(path.join(dir, tracker.name), 'utf8'),
    gzip: fs.readFileSync(path.join(dir, `${tracker.name}.gz`)),
    etag: tracker.etag,
  };
}

export function readPrebuiltDashboard(dir = ASSETS_DIR): PrebuiltAssets['dashboard'] {
  const { dashboard } = readManifest(dir);
  const at = path.join(dir, 'dashboard');
  return {
    script: dashboard.script,
    style: dashboard.style,
    files: dashboard.files.map(({ name, type }) => ({
      name,
      type,
      body: fs.readFileSync(path.join(at, name)),
      gzip: fs.readFileSync(path.join(at, `${name}.gz`)),
    })),
  };
}
