// The `trackway/client` package subpath (README, "The TypeScript client"),
// built by scripts/build.ts into dist/client/:
//   index.js    src/client/index.ts and generated/client.ts bundled by esbuild
//               into one ES module (openapi-fetch stays a dependency, imported);
//   index.d.ts  re-exports types/, the declarations tsc emits for them
//               (tsconfig.client.json), with their `.ts` import specifiers
//               turned into `.js` so that any TypeScript set-up resolves them.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { build } from 'esbuild';

async function bundle(root: string, outDir: string): Promise<void> {
  await build({
    entryPoints: [path.join(root, 'src', 'client', 'index.ts')],
    outfile: path.join(outDir, 'index.js'),
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    legalComments: 'none',
    logLevel: 'silent',
  });
}

async function declarations(root: string, outDir: string): Promise<void> {
  const types = path.join(outDir, 'types');
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  // not spawnSync: the build bundles the tracker and the dashboard meanwhile
  const child = spawn(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.client.json'), '--outDir', types], { cwd: root, stdio: 'inherit' });
  const code = await new Promise<number | string | null>((resolve) => {
    child.once('error', (e) => resolve(e.message));
    child.once('close', (c, signal) => resolve(c ?? signal));
  });
  if (code !== 0) throw new Error(`tsc (client declarations) failed (${typeof code === 'string' ? code : `exit ${code}`})`);
  for (const rel of fs.readdirSync(types, { recursive: true, encoding: 'utf8' })) {
    if (!rel.endsWith('.d.ts')) continue;
    const file = path.join(types, rel);
    const text = fs.readFileSync(file, 'utf8');
    fs.writeFileSync(file, text.replace(/(from\s+|import\()(['"])(\.{1,2}\/[^'"]+)\.ts\2/g, '$1$2$3.js$2'));
  }
  fs.writeFileSync(path.join(outDir, 'index.d.ts'), "export * from './types/src/client/index.js';\n");
}

export async function buildClient(root: string, outDir: string): Promise<void> {
  fs.mkdirSync(outDir, { recursive: true });
  await Promise.all([bundle(root, outDir), declarations(root, outDir)]);
}
