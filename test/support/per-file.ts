/**
 * Setup file of every tier (`vitest.config.ts`), run before each test file, also in a process that runs many
 * files one after another (`isolate: false`): what a file changed in the process is undone after it.
 */
import { afterAll } from 'vitest';
import { removeOpenGitRemotes } from '../sources/git-fixture.ts';

const env = { ...process.env };

afterAll(() => {
  removeOpenGitRemotes();
  for (const name of Object.keys(process.env)) if (!(name in env)) delete process.env[name];
  for (const [name, value] of Object.entries(env)) if (process.env[name] !== value) process.env[name] = value;
});
