import { defineConfig } from 'vitest/config';
import { testTiers } from './test/support/tiers.ts';

// Three tiers (test/support/tiers.ts): `npx vitest run --project fast` needs no database and takes seconds;
// `npm test` runs all three.
const tiers = testTiers();
const DATABASES = ['test/support/global-setup.ts'];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
    fileParallelism: true,
    projects: [
      { extends: true, test: { name: 'fast', include: tiers.fast } },
      { extends: true, test: { name: 'db', include: tiers.db, globalSetup: DATABASES } },
      { extends: true, test: { name: 'heavy', include: tiers.heavy, globalSetup: DATABASES } },
    ],
  },
});
