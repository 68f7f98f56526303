// The browser tracker as served: tracker/tracker.ts bundled and minified with
// esbuild into memory, once per process, with its gzipped size and an ETag.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { buildInMemory } from '../http/bundler.ts';

export const TRACKER_SOURCE = fileURLToPath(new URL('./tracker/tracker.ts', import.meta.url));
/** The limit DESIGN.md sets for the served script, gzipped. */
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

const version = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

async function bundle(): Promise<TrackerBundle> {
  const out = await buildInMemory({
    entryPoints: [TRACKER_SOURCE],
    bundle: true,
    minify: true,
    format: 'iife',
    target: ['es2017'],
    platform: 'browser',
    charset: 'utf8',
    legalComments: 'none',
    banner: { js: `/*! Trackway tracker ${version} */` },
    write: false,
    logLevel: 'silent',
  }); // the service process is stopped afterwards (see buildInMemory)
  const code = out.outputFiles[0]!.text;
  const gzip = gzipSync(code, { level: 9 });
  const etag = `"tw-${createHash('sha256').update(code).digest('base64url').slice(0, 22)}"`;
  return { code, gzip, gzipBytes: gzip.length, etag };
}

let built: Promise<TrackerBundle> | undefined;

/** The bundle, built on first call and shared afterwards (a failed build is retried on the next call). */
export function getTracker(): Promise<TrackerBundle> {
  built ??= bundle().catch((err: unknown) => {
    built = undefined;
    throw err;
  });
  return built;
}
