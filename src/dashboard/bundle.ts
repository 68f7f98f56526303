// The dashboard's browser code as served: app/main.tsx (Preact) and
// app/style.css bundled and minified with esbuild, each under a name carrying
// a hash of its content (so they can be cached for a year), plus the HTML
// page that loads them. `npm run build` bundles them into dist/assets/ (see
// http/prebuilt-assets.ts), which the compiled server reads; under tsx (tests,
// `npm run dev`) they are bundled into memory, once per process.
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { FAVICON_LINK } from '../http/favicon.ts';
import { readPrebuiltDashboard } from '../http/prebuilt-assets.ts';
import { COMPILED, projectPath } from '../project.ts';

const APP_DIR = projectPath('src', 'dashboard', 'app');

export interface DashboardAsset {
  /** file name under /dashboard/assets/, with the content hash */
  name: string;
  type: string;
  body: Buffer;
  /** gzip of `body`, for clients that accept it */
  gzip: Buffer;
}

export interface DashboardBundle {
  html: string;
  /** by file name */
  assets: Map<string, DashboardAsset>;
}

function hashed(base: string, ext: string, body: Buffer): string {
  return `${base}-${createHash('sha256').update(body).digest('base64url').slice(0, 12)}.${ext}`;
}

function page(script: string, style: string): string {
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Trackway dashboard</title>
  ${FAVICON_LINK}
  <link rel="stylesheet" href="/dashboard/assets/${style}">
  <script type="module" src="/dashboard/assets/${script}"></script>
</head>
<body>
  <div id="app"><p class="boot">Loading the dashboard…</p></div>
  <noscript><p class="boot">The Trackway dashboard needs JavaScript.</p></noscript>
</body>
</html>
`;
}

/** The bundled files: the script and the style sheet under their hashed names. */
export interface DashboardFiles {
  script: string;
  style: string;
  files: DashboardAsset[];
}

/** Bundles the dashboard from its sources with esbuild (the build, and the tsx path). */
export async function buildDashboard(): Promise<DashboardFiles> {
  const { buildInMemory } = await import('../http/bundler.ts');
  const out = await buildInMemory({
    entryPoints: { app: `${APP_DIR}/main.tsx`, style: `${APP_DIR}/style.css` },
    outdir: '/dashboard-assets',
    bundle: true,
    minify: true,
    format: 'esm',
    target: ['es2020'],
    platform: 'browser',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    charset: 'utf8',
    legalComments: 'none',
    write: false,
    logLevel: 'silent',
  });
  const files: DashboardAsset[] = [];
  let script = '';
  let style = '';
  for (const file of out.outputFiles) {
    const body = Buffer.from(file.contents);
    if (file.path.endsWith('/app.js')) {
      script = hashed('app', 'js', body);
      files.push({ name: script, type: 'text/javascript; charset=utf-8', body, gzip: gzipSync(body, { level: 9 }) });
    } else if (file.path.endsWith('/style.css')) {
      style = hashed('style', 'css', body);
      files.push({ name: style, type: 'text/css; charset=utf-8', body, gzip: gzipSync(body, { level: 9 }) });
    }
  }
  if (!script || !style) throw new Error('the dashboard bundle lacks its script or style sheet');
  return { script, style, files };
}

async function bundle(): Promise<DashboardBundle> {
  const { script, style, files } = COMPILED ? readPrebuiltDashboard() : await buildDashboard();
  return { html: page(script, style), assets: new Map(files.map((f) => [f.name, f])) };
}

let built: Promise<DashboardBundle> | undefined;

/** The bundle, loaded on first call and shared afterwards (a failed build is retried on the next call). */
export function getDashboard(): Promise<DashboardBundle> {
  built ??= bundle().catch((err: unknown) => {
    built = undefined;
    throw err;
  });
  return built;
}
