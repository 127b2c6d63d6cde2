#!/usr/bin/env node
// The `agentyard` command. Sources are TypeScript run directly by Node's type stripping (Node >= 22.18).
import { main } from '../src/cli/main.ts';

main(process.argv.slice(2)).then(
  (code) => {
    if (typeof code === 'number') process.exitCode = code;
  },
  (err) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exitCode = 1;
  },
);
