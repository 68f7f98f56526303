// The boundaries between the areas of src/, kept by `npm run lint`
// (docs/architecture.md says why; test/foundation/boundaries.test.ts plants
// a violation of each kind and checks that the linter refuses it).
//
// 1. SQL: `kysely` and `pg` are imported (as values) only by repositories
//    (`*.repository.ts`) and src/db/. Types may be named anywhere.
// 2. Areas: an area reaches another only through its services
//    (`*.service.ts`), its types (`*.types.ts`) and the modules listed in
//    EXPOSED below; never through a repository, a handler or a helper.
// 3. http/: an area imports from src/http/ only the kit (HTTP_KIT: error
//    bodies, pagination, contract types, validation); the transport (app,
//    router, registry, fast path) reaches the areas, only through
//    registry.ts, never the other way. The kit imports no transport module.
// 4. Inside an area, only services and workers call its repositories
//    (`*.service.ts`, `*.worker.ts`, and the files in SERVICE_ROLE, which are
//    services or workers by role but not yet by name); handlers, CLIs,
//    payload builders and pure helpers go through a service. Types from a
//    repository may be named anywhere in the area.
// 5. src/db/ imports no area and nothing of http/.

export const AREAS = ['analytics', 'identity', 'platform', 'privacy', 'tracking', 'webhooks'];

/** Besides its `*.service.ts` and `*.types.ts`: what an area offers the others (paths inside the area). */
export const EXPOSED = {
  analytics: [],
  identity: [
    'normalise.ts', // how identify stores emails and phones (privacy hashes subjects the same way)
    'url-policy.ts', // allowed domains and hosts
    'verification.ts', // identify hash verification
    'visitors-upsert.repository.ts', // the visitors upsert as a fragment: the plain batch's one statement carries it beside the events insert
  ],
  platform: [
    'principal.ts', // the authenticated caller of a handler
    'access.ts', // requireOrganisation: tenant isolation of the platform API
    'organisation-directory.ts', // the cached organisation policy (deps.organisations)
    'secrets.ts', // the server's Cipher and keys
    'passwords.ts', // password hashing (analytics registration)
  ],
  privacy: [],
  tracking: [],
  webhooks: [
    'payloads/event-exported.ts', // the tracked event names
    'targets.ts', // the active-targets cache (deps.targets)
  ],
};

/** The part of src/http/ an area may import: nothing here reaches an area or the transport. */
export const HTTP_KIT = [
  'ajv.ts',
  'body-guard.ts',
  'bundler.ts',
  'client-address.ts',
  'contract.ts',
  'errors.ts',
  'field-errors.ts',
  'metrics.ts',
  'pagination.ts',
  'prebuilt-assets.ts',
  'rate-limit.ts',
  'traffic-limits.ts',
  'types.ts',
];

/** Services and workers by role whose name does not say so yet (the role-suffix rename empties this list). */
export const SERVICE_ROLE = {
  analytics: [],
  identity: ['profile.ts'],
  platform: ['access.ts', 'auth.ts', 'login-attempts.ts', 'organisation-directory.ts', 'secrets.ts'],
  privacy: ['eraser.ts', 'runner.ts'],
  tracking: ['bot-counts.ts', 'partitions.ts', 'plain-batch.ts'],
  webhooks: ['auto-disable.ts', 'backlog.ts', 'claim-round.ts', 'completions.ts', 'dispatcher.ts', 'metrics.ts', 'runtime.ts', 'targets.ts'],
};

/**
 * Known exceptions, each to be removed by the change named beside it:
 * file → [rule kind, the import it may still make].
 */
export const PENDING = {};

const other = (area) => AREAS.filter((a) => a !== area);
const under = (dir, files) => files.map((f) => `**/${dir}/${f}`);

function zones(pendingImports = []) {
  const extra = pendingImports.map((p) => `**/${p}`);
  const exposed = AREAS.flatMap((a) => under(`src/${a}`, EXPOSED[a]));
  return [
    ...AREAS.map((area) => ({
      target: `src/${area}/**`,
      from: other(area).map((a) => `src/${a}/**`),
      except: ['**/*.service.ts', '**/*.types.ts', ...exposed, ...extra],
      message: 'An area reaches another only through its *.service.ts, *.types.ts or a module eslint.boundaries.js EXPOSED lists.',
    })),
    {
      target: AREAS.map((a) => `src/${a}/**`),
      from: ['src/http/**'],
      except: [...under('src/http', HTTP_KIT), ...extra],
      message: 'An area imports only the kit of src/http/ (eslint.boundaries.js HTTP_KIT), never its transport.',
    },
    {
      target: 'src/http/!(registry).ts',
      from: AREAS.map((a) => `src/${a}/**`),
      message: 'src/http/ reaches the areas only through registry.ts.',
    },
    {
      target: under('src/http', HTTP_KIT).map((g) => g.replace('**/', '')),
      from: ['src/http/**'],
      except: under('src/http', HTTP_KIT),
      message: 'The http kit imports no transport module.',
    },
    {
      target: 'src/db/**',
      from: [...AREAS.map((a) => `src/${a}/**`), 'src/http/**'],
      message: 'src/db/ is below every area: it imports none of them.',
    },
  ];
}

const SQL_PACKAGES = [
  { name: 'kysely', allowTypeImports: true, message: 'SQL is written in *.repository.ts (or src/db/) only.' },
  { name: 'pg', allowTypeImports: true, message: 'The database is reached through *.repository.ts (or src/db/) only.' },
];

const REPOSITORY_PATTERN = {
  group: ['*.repository.ts'],
  allowTypeImports: true,
  message: 'Only services and workers (*.service.ts, *.worker.ts, eslint.boundaries.js SERVICE_ROLE) call repositories.',
};

/** The flat-config blocks that keep the boundaries (spread into eslint.config.js). */
export function boundaries(basePath) {
  const pendingFiles = Object.keys(PENDING);
  const serviceRole = AREAS.flatMap((a) => SERVICE_ROLE[a].map((f) => `src/${a}/${f}`));
  return [
    {
      files: ['src/**/*.ts', 'src/**/*.tsx'],
      rules: { 'import-x/no-restricted-paths': ['error', { basePath, zones: zones() }] },
    },
    ...Object.entries(PENDING)
      .filter(([, p]) => p.imports)
      .map(([file, p]) => ({
        files: [file],
        rules: { 'import-x/no-restricted-paths': ['error', { basePath, zones: zones(p.imports) }] },
      })),
    {
      files: ['src/**/*.ts', 'src/**/*.tsx'],
      ignores: ['src/**/*.repository.ts', 'src/db/**', ...pendingFiles.filter((f) => PENDING[f].sql)],
      rules: { '@typescript-eslint/no-restricted-imports': ['error', { paths: SQL_PACKAGES }] },
    },
    {
      files: AREAS.flatMap((a) => [`src/${a}/**/*.ts`, `src/${a}/**/*.tsx`]),
      ignores: ['src/**/*.repository.ts', 'src/**/*.service.ts', 'src/**/*.worker.ts', ...serviceRole, ...pendingFiles.filter((f) => PENDING[f].sql)],
      rules: { '@typescript-eslint/no-restricted-imports': ['error', { paths: SQL_PACKAGES, patterns: [REPOSITORY_PATTERN] }] },
    },
  ];
}
