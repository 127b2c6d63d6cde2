import { defineConfig } from 'vitest/config';
import { testTiers } from './test/support/tiers.ts';
import { TierSequencer } from './test/support/tier-sequencer.ts';

// Three tiers (test/support/tiers.ts): `npx vitest run --project fast` needs no database and takes seconds;
// `npm test` runs all three.
const tiers = testTiers();

// The forks inherit these at their start, when glibc reads them. A test process opens and closes PGlite threads
// all along; with an arena per thread and no trimming, their freed memory stayed in the process (480 MB after
// three were closed, 225 MB with these), and every fork for git, an agent or bubblewrap copies the page tables
// of all of it.
process.env.MALLOC_ARENA_MAX ??= '2';
process.env.MALLOC_TRIM_THRESHOLD_ ??= String(1024 * 1024);
const DATABASES = ['test/support/global-setup.ts'];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // A test file runs in a fresh process, whose PGlite threads run for seconds: V8's optimizing tier-up of
    // PGlite's 9 MB of WebAssembly cost ≈ 0.55 s of CPU per process and never paid for itself. Only the tests'
    // processes; `agentyard serve` keeps V8's defaults.
    execArgv: ['--liftoff-only'],
    // Three forks on two cores: much of a test's time is spent waiting on other processes (git, agents,
    // PostgreSQL); 3 took 559 s where 2 took 671 s and 4 took 564 s in fresh-clone runs.
    maxWorkers: 3,
    fileParallelism: true,
    // Undoes after each file what it changed in the process (environment variables, leftover git remotes), so
    // that files can share a process.
    setupFiles: ['test/support/per-file.ts'],
    // Heavy tier first, fast tier last (test/support/tier-sequencer.ts): the long files start early.
    sequence: { sequencer: TierSequencer },
    // `isolate: false` (fast and db tiers): a fork runs file after file instead of one fresh process per file,
    // which paid Node's start, the server's imports and PGlite's WebAssembly compilation every time. The whole
    // suite took 710 s of CPU (user+sys) where it took 949 s isolated. The heavy tier stays isolated: its files
    // start other processes and clusters and are few.
    projects: [
      { extends: true, test: { name: 'fast', include: tiers.fast, isolate: false } },
      { extends: true, test: { name: 'db', include: tiers.db, globalSetup: DATABASES, isolate: false } },
      { extends: true, test: { name: 'heavy', include: tiers.heavy, globalSetup: DATABASES } },
    ],
  },
});
