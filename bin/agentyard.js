#!/usr/bin/env -S node --max-semi-space-size=16
// The `agentyard` command. Sources are TypeScript run directly by Node's type stripping (Node >= 22.18).
// --max-semi-space-size=16 (here, in `npm start` and in the Dockerfile): see docs/decisions.md, "A bounded young generation".
// The version check comes first and main.ts is imported only after it: a static import of a .ts file would be
// loaded (and fail on an old Node) before any line of this file runs.
import { nodeVersionProblem } from './node-version.js';

const problem = nodeVersionProblem(process.versions.node);
if (problem) {
  console.error(problem);
  process.exitCode = 1;
} else {
  const { main } = await import('../src/cli/main.ts');
  main(process.argv.slice(2)).then(
    (code) => {
      if (typeof code === 'number') process.exitCode = code;
    },
    (err) => {
      console.error(err instanceof Error ? err.message : String(err));
      process.exitCode = 1;
    },
  );
}
