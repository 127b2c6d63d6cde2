import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const ROOT = path.resolve(import.meta.dirname, '../..');

/**
 * Writes an entry script that runs bin/agentyard.js with one addition: on SIGUSR2 it ends the process's
 * PGlite threads as a crash would (the test seam of src/store/pglite-thread.ts). Returns its path.
 */
export function writeEntryWithPgliteSeam(dir: string): string {
  const entry = path.join(dir, 'agentyard-with-pglite-seam.mjs');
  writeFileSync(
    entry,
    `import { terminatePgliteThreadsForTesting } from ${JSON.stringify(pathToFileURL(path.join(ROOT, 'src/store/pglite-thread.ts')).href)};
process.on('SIGUSR2', () => void terminatePgliteThreadsForTesting());
await import(${JSON.stringify(pathToFileURL(path.join(ROOT, 'bin/agentyard.js')).href)});
`,
  );
  return entry;
}
