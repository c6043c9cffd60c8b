import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * The layers' boundaries, enforced: the queue knows nothing outside itself
 * (but the package's leaf modules errors.ts and sleep.ts); its internal.ts
 * (what tests and benchmarks reach into) is for test/ and bench/ only; the crawler knows nothing of the
 * command line and uses the queue only through its public index.
 * The crawler's concern folders are used from outside through their index.ts
 * only. test/unit/boundaries.test.ts proves each rule fails on a forbidden
 * import.
 */
const CRAWL_FOLDERS = ['counters', 'dedupe', 'fetch', 'lease', 'links', 'output', 'robots', 'seed', 'store', 'urls'];

/** Modules of a folder the kickoff takes directly: they load neither undici nor htmlparser2. */
const KICKOFF_LEAVES = { fetch: ['netguard.js'], links: ['domain-list.js', 'enqueue.js', 'hashed-keys.js', 'scope.js'] };

/** Each concern folder through its index only; `leaves`: modules of a folder that may also be taken directly. */
const folderRules = (leaves = {}) =>
  CRAWL_FOLDERS.map((f) => ({
    group: [`**/${f}/*`, `!**/${f}/index.js`, ...(leaves[f] ?? []).map((m) => `!**/${f}/${m}`)],
    message: `src/crawl/${f}/ is used through its index.ts from outside the folder${leaves[f] ? ` (here also ${leaves[f].join(', ')})` : ''}.`,
  }));

const crawlFolders = folderRules();

/** src/crawl's rules: no command line, the queue through its index, and `folders`' rules. */
const crawlerPatterns = (folders) => [
  { group: ['**/cli', '**/cli.js', '**/cli/**'], message: 'the crawler knows nothing of the command line.' },
  { group: ['**/queue/**', '!**/queue/index.js'], message: 'the crawler uses the queue through src/queue/index.ts only.' },
  ...folders,
];

const boundaries = [
  {
    files: ['src/queue/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['../**', '!../errors.js', '!../sleep.js'], message: 'src/queue knows nothing outside src/queue (only the leaf modules ../errors.js and ../sleep.js).' }] },
      ],
    },
  },
  {
    files: ['src/crawl/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: crawlerPatterns(crawlFolders) }] },
  },
  {
    // The kickoff (`weir kickoff`, and the process of `weir crawl` that runs
    // it before its workers start) loads no HTTP client and no HTML parser:
    // it takes the few modules it needs of fetch/ and links/, each loading
    // neither, directly (a kickoff 0.15 s sooner, its CPU 0.17 s less;
    // test/unit/kickoff-imports.test.ts keeps it so).
    files: ['src/crawl/kickoff.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: crawlerPatterns(folderRules(KICKOFF_LEAVES)),
        },
      ],
    },
  },
  {
    files: ['src/status/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['../cli', '../cli.js', '../cli/**'], message: 'the status page knows nothing of the command line.' },
            { group: ['../queue/**', '!../queue/index.js'], message: 'the status page uses the queue through src/queue/index.ts only.' },
            ...crawlFolders,
          ],
        },
      ],
    },
  },
  {
    files: ['src/*.ts', 'src/cli/**/*.ts', 'src/demo/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [{ group: ['**/queue/**', '!**/queue/index.js'], message: 'outside src/queue, the queue is used through src/queue/index.ts only (internal.ts is for test/ and bench/).' }, ...crawlFolders] }] },
  },
  {
    // Small modules and short functions: each file holdable in one's head.
    files: ['src/**/*.ts'],
    rules: {
      'max-lines': ['error', { max: 400 }],
      'max-lines-per-function': ['error', { max: 60 }],
    },
  },
];

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.weir/', 'coverage/', 'scratch/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          // node:test's describe/it return promises the runner itself awaits.
          allowForKnownSafeCalls: [{ from: 'package', name: ['describe', 'it', 'test', 'suite'], package: 'node:test' }],
        },
      ],
    },
  },
  ...boundaries,
  {
    files: ['eslint.config.js'],
    ...tseslint.configs.disableTypeChecked,
  },
  {
    // Plain ES modules: preloaded into test processes (node --import), run by a benchmark without a TypeScript loader, or by the build.
    files: ['test/**/*.mjs', 'bench/**/*.mjs', 'scripts/**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      globals: { performance: 'readonly', process: 'readonly', URL: 'readonly', setTimeout: 'readonly' },
    },
  },
  {
    // The status page's script runs in a browser, as plain JavaScript.
    files: ['web/**/*.js'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      sourceType: 'script',
      globals: Object.fromEntries(
        ['window', 'document', 'fetch', 'URLSearchParams', 'Intl', 'setTimeout', 'clearTimeout', 'uPlot', 'console', 'performance'].map((name) => [name, 'readonly']),
      ),
    },
  },
);
