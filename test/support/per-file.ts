/**
 * Setup file of every tier (`vitest.config.ts`), run before each test file, also in a process that runs many
 * files one after another (`isolate: false`): what a file changed in the process is undone after it. Each test
 * process also gets a memory guard (memory-guard.ts).
 */
import { afterAll, beforeAll, expect } from 'vitest';
import { removeOpenGitRemotes } from '../sources/git-fixture.ts';
import { startMemoryGuard } from './memory-guard.ts';

const env = { ...process.env };
// one guard per process, however many files it runs
const running = globalThis as { agentyardTestFile?: string; agentyardMemoryGuard?: () => void };
running.agentyardMemoryGuard ??= startMemoryGuard({ current: () => running.agentyardTestFile });

beforeAll(() => {
  running.agentyardTestFile = expect.getState().testPath;
});

afterAll(() => {
  removeOpenGitRemotes();
  for (const name of Object.keys(process.env)) if (!(name in env)) delete process.env[name];
  for (const [name, value] of Object.entries(env)) if (process.env[name] !== value) process.env[name] = value;
});
