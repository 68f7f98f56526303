// Where the project is, for the files read at run time (package.json, the
// contract in generated/, the prebuilt browser assets in dist/assets/). The
// same code runs from src/ under tsx (tests, `npm run dev`) and from dist/src/
// once compiled (`npm start`), one directory deeper.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** true when running the compiled JavaScript in dist/, false under tsx */
export const COMPILED = import.meta.url.endsWith('.js');

/** the directory holding package.json */
export const PROJECT_ROOT = fileURLToPath(new URL(COMPILED ? '../../' : '../', import.meta.url));

export function projectPath(...parts: string[]): string {
  return path.join(PROJECT_ROOT, ...parts);
}

/** what `npm run build` writes: the compiled server (dist/src/), the bundled browser assets (dist/assets/) */
export const DIST_DIR = projectPath('dist');

export const PACKAGE_VERSION = (JSON.parse(readFileSync(projectPath('package.json'), 'utf8')) as { version: string }).version;
