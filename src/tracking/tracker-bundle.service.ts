// The browser tracker as served: tracker/tracker.browser.ts bundled and minified with
// esbuild, with its gzipped size and an ETag. `npm run build` bundles it into
// dist/assets/ (see http/prebuilt-assets.ts), which the compiled server reads;
// under tsx (tests, `npm run dev`) it is bundled into memory, once per process.
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { readPrebuiltTracker } from '../http/prebuilt-assets.ts';
import { COMPILED, PACKAGE_VERSION, projectPath } from '../project.ts';

export const TRACKER_SOURCE = projectPath('src', 'tracking', 'tracker', 'tracker.browser.ts');
/** The limit docs/design.md ("Browser tracker") sets for the served script, gzipped. */
export const TRACKER_GZIP_LIMIT = 2048;

export interface TrackerBundle {
  /** the minified script */
  code: string;
  /** gzip of `code` (level 9), served to clients that accept gzip */
  gzip: Buffer;
  gzipBytes: number;
  /** strong entity tag of `code`, quoted */
  etag: string;
}

/** Bundles the tracker from its source with esbuild (the build, and the tsx path). */
export async function buildTracker(): Promise<TrackerBundle> {
  const { buildInMemory } = await import('../http/bundler.ts');
  const out = await buildInMemory({
    entryPoints: [TRACKER_SOURCE],
    bundle: true,
    minify: true,
    format: 'iife',
    target: ['es2017'],
    platform: 'browser',
    charset: 'utf8',
    legalComments: 'none',
    banner: { js: `/*! Trackway tracker ${PACKAGE_VERSION} */` },
    write: false,
    logLevel: 'silent',
  }); // the service process is stopped afterwards (see buildInMemory)
  const code = out.outputFiles[0]!.text;
  const gzip = gzipSync(code, { level: 9 });
  const etag = `"tw-${createHash('sha256').update(code).digest('base64url').slice(0, 22)}"`;
  return { code, gzip, gzipBytes: gzip.length, etag };
}

async function load(): Promise<TrackerBundle> {
  if (!COMPILED) return buildTracker();
  const { code, gzip, etag } = readPrebuiltTracker();
  return { code, gzip, gzipBytes: gzip.length, etag };
}

let built: Promise<TrackerBundle> | undefined;

/** The bundle, loaded on first call and shared afterwards (a failed load is retried on the next call). */
export function getTracker(): Promise<TrackerBundle> {
  built ??= load().catch((err: unknown) => {
    built = undefined;
    throw err;
  });
  return built;
}
