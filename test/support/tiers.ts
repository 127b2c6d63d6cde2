/**
 * The three tiers of the suite, decided from each test file's text and the test helpers it reaches (so that a
 * new file lands in the right tier by itself):
 *
 * - `fast`: pure modules, no database, no server, no other process: seconds (`npx vitest run --project fast`);
 * - `db`: the database matrix (PGlite and PostgreSQL, started once by the global setup), servers on loopback;
 * - `heavy`: Kubernetes, browsers, the official clients, other OS processes, the README tour.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

export type Tier = 'fast' | 'db' | 'heavy';

const root = path.resolve(import.meta.dirname, '..', '..');

/** Folders whose every file is heavy, and files that run whole tools (tsc, Biome, dependency-cruiser). */
const HEAVY_FOLDERS = [
  'test/operator/',
  'test/e2e/',
  'test/compat/',
  'test/chart/',
  'test/typecheck.test.ts',
  'test/architecture.test.ts',
];
/** What makes a file heavy wherever it is: helpers that start a browser, a cluster or another process. */
const HEAVY_MARKS = [
  'support/chromium',
  'support/processes',
  'support/agentyard-process',
  'spawnAgentyard',
  'spawnProcess',
  'kernel/run-command',
  'startKubernetes',
  'k8s-test-env',
  'real-codex',
  '@modelcontextprotocol/conformance',
];
/** What makes a file need the database matrix. */
const DB_MARKS = [
  'support/db',
  'support/server',
  'support/postgres-server',
  'createTestDatabase',
  'startTestServer',
  'openPglite',
  'store/pglite',
  'store/pg.ts',
];

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** The text of a test file and of every test helper it imports (relative imports inside test/), transitively. */
function reachedText(file: string, seen = new Set<string>()): string {
  if (seen.has(file)) return '';
  seen.add(file);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return '';
  }
  let out = text;
  for (const m of text.matchAll(/from '(\.{1,2}\/[^']+\.ts)'/g)) {
    const target = path.resolve(path.dirname(file), m[1]!);
    if (target.startsWith(path.join(root, 'test'))) out += `\n${reachedText(target, seen)}`;
  }
  return out;
}

export function tierOf(file: string): Tier {
  const rel = path.relative(root, file).split(path.sep).join('/');
  if (HEAVY_FOLDERS.some((f) => rel.startsWith(f)) || /multi-(process|node)/.test(rel)) return 'heavy';
  const text = reachedText(file);
  if (HEAVY_MARKS.some((m) => text.includes(m))) return 'heavy';
  if (DB_MARKS.some((m) => text.includes(m))) return 'db';
  return 'fast';
}

/** The test files of each tier, relative to the repository. */
export function testTiers(): Record<Tier, string[]> {
  const out: Record<Tier, string[]> = { fast: [], db: [], heavy: [] };
  for (const file of files(path.join(root, 'test')).filter((f) => f.endsWith('.test.ts')))
    out[tierOf(file)].push(path.relative(root, file).split(path.sep).join('/'));
  return out;
}
