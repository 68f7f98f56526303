// The boundaries between the areas (eslint.boundaries.js) are kept by the
// linter: each planted file below breaks one of them and the linter must say
// so, with the rule that keeps it; a file that keeps them all gets no
// boundary error. The files are written into src/ for the one run and always
// removed.
import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { expect } from 'chai';
import { ESLint } from 'eslint';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PATHS_RULE = 'import-x/no-restricted-paths';
const IMPORTS_RULE = '@typescript-eslint/no-restricted-imports';
const BOUNDARY_RULES = new Set([PATHS_RULE, IMPORTS_RULE]);

interface Plant {
  /** where in src/, with {tag} for a name unique to this run */
  file: string;
  code: string;
  /** the boundary rules the linter must report, one entry per error, in line order */
  expected: string[];
}

const PLANTS: Plant[] = [
  {
    // a handler writing SQL
    file: 'src/analytics/{tag}.handlers.ts',
    code: "import { sql } from 'kysely';\nexport const probe = sql`SELECT 1`;\n",
    expected: [IMPORTS_RULE],
  },
  {
    // a helper reaching the database around the repositories
    file: 'src/webhooks/{tag}.rules.ts',
    code: "import pg from 'pg';\nexport const probe = pg.Client;\n",
    expected: [IMPORTS_RULE],
  },
  {
    // an area reading another area's repository
    file: 'src/privacy/{tag}.service.ts',
    code: "import { findVisitor } from '../identity/visitors.repository.ts';\nexport const probe = findVisitor;\n",
    expected: [PATHS_RULE],
  },
  {
    // an area reaching another area's helper that is not on its list
    file: 'src/platform/{tag}.service.ts',
    code: "import { sign } from '../webhooks/signing.crypto.ts';\nexport const probe = sign;\n",
    expected: [PATHS_RULE],
  },
  {
    // a handler calling its own area's repository
    file: 'src/webhooks/{tag}.handlers.ts',
    code: "import { listDeliveries } from './deliveries.repository.ts';\nexport const probe = listDeliveries;\n",
    expected: [IMPORTS_RULE],
  },
  {
    // an area importing the http transport
    file: 'src/identity/{tag}.service.ts',
    code: "import { handlers } from '../http/registry.ts';\nexport const probe = handlers;\n",
    expected: [PATHS_RULE],
  },
  {
    // the http transport reaching an area elsewhere than through registry.ts
    file: 'src/http/{tag}.ts',
    code: "import { usersHandlers } from '../platform/users.handlers.ts';\nexport const probe = usersHandlers;\n",
    expected: [PATHS_RULE],
  },
  {
    // src/db/ reaching up into an area
    file: 'src/db/{tag}.ts',
    code: "import { userView } from '../platform/users.service.ts';\nexport const probe = userView;\n",
    expected: [PATHS_RULE],
  },
  {
    // the geo library reaching up into an area
    file: 'src/geo/{tag}.rules.ts',
    code: "import { botReason } from '../tracking/bots.rules.ts';\nexport const probe = botReason;\n",
    expected: [PATHS_RULE],
  },
  {
    // all allowed: a service calling its own repository, another area's service
    // and exposed module, the http kit, and naming a Kysely type
    file: 'src/webhooks/{tag}.service.ts',
    code: [
      "import type { Kysely } from 'kysely';",
      "import type { DB } from '../db/schema.ts';",
      "import { platformError } from '../http/errors.ts';",
      "import { requireOrganisation } from '../platform/access.service.ts';",
      "import { userView } from '../platform/users.service.ts';",
      "import { listDeliveries } from './deliveries.repository.ts';",
      'export type Probe = Kysely<DB>;',
      'export const probe = [platformError, requireOrganisation, userView, listDeliveries];',
      '',
    ].join('\n'),
    expected: [],
  },
];

describe('area boundaries (eslint.boundaries.js)', function () {
  // a type-aware lint of the planted files builds the TypeScript program once
  this.timeout(300_000);

  it('refuses SQL outside repositories, repositories outside services, another area but through its services, the http transport from an area, an area from http but through the registry', async () => {
    const tag = `boundary-probe-${process.pid}`;
    const files = PLANTS.map((p) => path.join(ROOT, p.file.replace('{tag}', tag)));
    try {
      PLANTS.forEach((p, i) => writeFileSync(files[i]!, p.code));
      const results = await new ESLint({ cwd: ROOT }).lintFiles(files);
      PLANTS.forEach((p, i) => {
        const result = results.find((r) => r.filePath === files[i]);
        expect(result, p.file).to.not.equal(undefined);
        const fatal = result!.messages.filter((m) => m.fatal);
        expect(fatal, p.file).to.deep.equal([]);
        const found = result!.messages.filter((m) => m.ruleId !== null && BOUNDARY_RULES.has(m.ruleId)).map((m) => m.ruleId);
        expect(found, p.file).to.deep.equal(p.expected);
      });
    } finally {
      for (const f of files) rmSync(f, { force: true });
    }
  });

  it('keeps the http kit below the areas and the transport', async () => {
    // linted as the text of a kit module (pagination.ts), the file itself untouched
    const filePath = path.join(ROOT, 'src/http/pagination.ts');
    const code = [
      "import { requireOrganisation } from '../platform/access.service.ts';",
      "import { handlers } from './registry.ts';",
      "import { platformError } from './errors.ts';",
      'export const probe = [requireOrganisation, handlers, platformError];',
      '',
    ].join('\n');
    const [result] = await new ESLint({ cwd: ROOT }).lintText(code, { filePath });
    const found = result!.messages.filter((m) => m.ruleId !== null && BOUNDARY_RULES.has(m.ruleId)).map((m) => [m.line, m.ruleId]);
    expect(found).to.deep.equal([
      [1, PATHS_RULE],
      [2, PATHS_RULE],
    ]);
  });

  it('finds a role in the name of every file of an area and of src/geo/', async () => {
    // the linter's own lists (a JavaScript module outside the typed program)
    const { AREAS, ROLES } = (await import(pathToFileURL(path.join(ROOT, 'eslint.boundaries.js')).href)) as { AREAS: string[]; ROLES: string[] };
    const roleOf = (file: string) => /\.([a-z]+)\.tsx?$/.exec(file)?.[1];
    const files = execFileSync('git', ['ls-files', ...AREAS.map((a) => `src/${a}`), 'src/geo'], { cwd: ROOT, encoding: 'utf8' })
      .split('\n')
      .filter((f) => /\.tsx?$/.test(f));
    expect(files.length).to.be.greaterThan(100);
    expect(files.filter((f) => !ROLES.includes(roleOf(f) ?? ''))).to.deep.equal([]);
    // and the check would see one: a file named for no role
    expect(ROLES.includes(roleOf('src/webhooks/dispatcher.ts') ?? '')).to.equal(false);
  });
});
