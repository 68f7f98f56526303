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
// 4. Inside an area, only services and workers (`*.service.ts`,
//    `*.worker.ts`) call its repositories; handlers, CLIs, payload builders
//    and rules go through a service. Types from a repository may be named
//    anywhere in the area.
// 5. src/db/ and src/geo/ import no area and nothing of http/.
// 6. Every file of an area and of src/geo/ says its role in its name (ROLES;
//    checked by test/foundation/boundaries.test.ts).

export const AREAS = ['analytics', 'identity', 'platform', 'privacy', 'tracking', 'webhooks'];

/** Besides its `*.service.ts` and `*.types.ts`: what an area offers the others (paths inside the area). */
export const EXPOSED = {
  analytics: [],
  identity: [
    'normalise.rules.ts', // how identify stores emails and phones (privacy hashes subjects the same way)
    'url-policy.rules.ts', // allowed domains and hosts
    'verification.rules.ts', // identify hash verification
    'visitors-upsert.repository.ts', // the visitors upsert as a fragment: the plain batch's one statement carries it beside the events insert
    'profile-upsert.repository.ts', // the profile and catalogue writes as fragments: the plain batch's one statement carries them too
    'recorded.rules.ts', // what an event records for its person and the catalogue (the plain batch hands it to profile-upsert)
  ],
  platform: [
    'principal.rules.ts', // the authenticated caller of a handler
    'passwords.crypto.ts', // password hashing (analytics registration)
  ],
  privacy: [],
  tracking: [],
  webhooks: [
    'payloads/event-exported.payload.ts', // the tracked event names
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
  'favicon.ts',
  'field-errors.ts',
  'metrics.ts',
  'pagination.ts',
  'prebuilt-assets.ts',
  'rate-limit.ts',
  'traffic-limits.ts',
  'types.ts',
];

/**
 * The role suffixes a file of an area (and of src/geo/) carries, as in
 * `dispatcher.worker.ts`; docs/architecture.md says what each role may do.
 * test/foundation/boundaries.test.ts checks every file has one.
 */
export const ROLES = [
  'handlers',
  'service',
  'worker',
  'repository',
  'rules',
  'crypto',
  'client',
  'payload',
  'page',
  'types',
  'cli',
  'browser',
  'locator',
  'build',
  'data',
];

const other = (area) => AREAS.filter((a) => a !== area);
const under = (dir, files) => files.map((f) => `**/${dir}/${f}`);

function zones() {
  const exposed = AREAS.flatMap((a) => under(`src/${a}`, EXPOSED[a]));
  return [
    ...AREAS.map((area) => ({
      target: `src/${area}/**`,
      from: other(area).map((a) => `src/${a}/**`),
      except: ['**/*.service.ts', '**/*.types.ts', ...exposed],
      message: 'An area reaches another only through its *.service.ts, *.types.ts or a module eslint.boundaries.js EXPOSED lists.',
    })),
    {
      target: AREAS.map((a) => `src/${a}/**`),
      from: ['src/http/**'],
      except: [...under('src/http', HTTP_KIT)],
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
    {
      target: 'src/geo/**',
      from: [...AREAS.map((a) => `src/${a}/**`), 'src/http/**'],
      message: 'src/geo/ is a library below every area: it imports none of them.',
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
  message: 'Only services and workers (*.service.ts, *.worker.ts) call repositories.',
};

/** The flat-config blocks that keep the boundaries (spread into eslint.config.js). */
export function boundaries(basePath) {
  return [
    {
      files: ['src/**/*.ts', 'src/**/*.tsx'],
      rules: { 'import-x/no-restricted-paths': ['error', { basePath, zones: zones() }] },
    },
    {
      files: ['src/**/*.ts', 'src/**/*.tsx'],
      ignores: ['src/**/*.repository.ts', 'src/db/**'],
      rules: { '@typescript-eslint/no-restricted-imports': ['error', { paths: SQL_PACKAGES }] },
    },
    {
      files: AREAS.flatMap((a) => [`src/${a}/**/*.ts`, `src/${a}/**/*.tsx`]),
      ignores: ['src/**/*.repository.ts', 'src/**/*.service.ts', 'src/**/*.worker.ts'],
      rules: { '@typescript-eslint/no-restricted-imports': ['error', { paths: SQL_PACKAGES, patterns: [REPOSITORY_PATTERN] }] },
    },
  ];
}
