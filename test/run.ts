/**
 * `npm test`: runs the whole vitest suite (PGlite and a real PostgreSQL server, started by the global setup)
 * and ends with one summary line, `N passed, N failed, N skipped`.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const resultsDir = path.join(root, '.test-results');
mkdirSync(resultsDir, { recursive: true });
const jsonFile = path.join(resultsDir, 'vitest.json');
// a report left by an earlier run must never stand in for this one
rmSync(jsonFile, { force: true });

const extra = process.argv.slice(2);
// vitest leads its own process group: a test that signals a wrong group (kill(0)) can end vitest but not
// this runner, which still prints the summary and fails
const vitest = spawn(
  process.execPath,
  [
    path.join(root, 'node_modules', 'vitest', 'vitest.mjs'),
    'run',
    '--reporter=default',
    '--reporter=json',
    `--outputFile.json=${jsonFile}`,
    ...extra,
  ],
  { cwd: root, stdio: 'inherit', env: process.env, detached: true },
);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    try {
      process.kill(-vitest.pid!, signal);
    } catch {
      // already gone
    }
  });
}
const result = await new Promise<{ status: number | null; signal: NodeJS.Signals | null }>((resolve) => {
  vitest.once('close', (status, signal) => resolve({ status, signal }));
});
if (result.signal) console.error(`\nvitest was ended by ${result.signal}`);

interface VitestJson {
  numPassedTests: number;
  numFailedTests: number;
  numPendingTests: number;
  numTodoTests: number;
  numFailedTestSuites: number;
  success: boolean;
}

let exitCode = result.status ?? 1;
if (existsSync(jsonFile)) {
  const report = JSON.parse(readFileSync(jsonFile, 'utf8')) as VitestJson;
  // A file that fails to load counts as a failure even though it ran no test.
  const failed = report.numFailedTests + (report.numFailedTests === 0 ? report.numFailedTestSuites : 0);
  console.log(
    `\n${report.numPassedTests} passed, ${failed} failed, ${report.numPendingTests + report.numTodoTests} skipped`,
  );
  if (report.numPassedTests === 0) exitCode = exitCode || 1;
} else {
  console.log('\n0 passed, 1 failed');
  exitCode = exitCode || 1;
}
process.exit(exitCode);
