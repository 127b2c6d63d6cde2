import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import type { Db } from '../kernel/db.ts';

const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));
/** Key of the advisory lock that serialises migration runs (and function installs) across processes. */
export const MIGRATION_LOCK_KEY = 7_242_001;
const BREAKING_MARKER = '--! breaking-change';

export interface Migration {
  id: number;
  name: string;
  sql: string;
  breaking: boolean;
}

export async function loadMigrations(dir = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f)).sort();
  const migrations: Migration[] = [];
  for (const file of files) {
    const sql = await readFile(path.join(dir, file), 'utf8');
    const id = Number(file.slice(0, 4));
    if (migrations.some((m) => m.id === id)) throw new Error(`two migrations share number ${id}: ${file}`);
    migrations.push({ id, name: file.replace(/\.sql$/, ''), sql, breaking: sql.includes(BREAKING_MARKER) });
  }
  return migrations;
}

export interface MigrateResult {
  applied: string[];
  current: number;
}

/**
 * Applies the numbered migrations that the database lacks, each in its own transaction under an advisory
 * lock, so that several processes starting together apply each migration exactly once.
 */
export async function migrate(db: Db, migrations?: Migration[]): Promise<MigrateResult> {
  const all = migrations ?? (await loadMigrations());
  // under the lock: two first starts on an empty database would race on creating the table
  await db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
    await tx.query(`CREATE TABLE IF NOT EXISTS agentyard_migrations (
      id integer PRIMARY KEY,
      name text NOT NULL,
      breaking boolean NOT NULL DEFAULT false,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
  });
  const latestKnown = all.at(-1)?.id ?? 0;
  const newer = await db.query<{ id: number; name: string; breaking: boolean }>(
    'SELECT id, name, breaking FROM agentyard_migrations WHERE id > $1 ORDER BY id',
    [latestKnown],
  );
  const breakingNewer = newer.rows.find((r) => r.breaking);
  if (breakingNewer) {
    throw new Error(
      `the database was migrated by a newer Agentyard (migration ${breakingNewer.name} is a breaking change); upgrade this binary`,
    );
  }
  const applied: string[] = [];
  for (const migration of all) {
    const didApply = await db.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
      const done = await tx.query('SELECT 1 FROM agentyard_migrations WHERE id = $1', [migration.id]);
      if (done.rowCount > 0) return false;
      for (const statement of splitStatements(migration.sql)) await tx.query(statement);
      await tx.query('INSERT INTO agentyard_migrations (id, name, breaking) VALUES ($1, $2, $3)', [
        migration.id,
        migration.name,
        migration.breaking,
      ]);
      return true;
    });
    if (didApply) applied.push(migration.name);
  }
  return { applied, current: Math.max(latestKnown, ...newer.rows.map((r) => r.id)) };
}

/**
 * Splits a migration file into statements at semicolons that end a line, outside dollar-quoted bodies.
 * Migrations are written one statement per semicolon-terminated line group.
 */
export function splitStatements(sql: string): string[] {
  const statements: string[] = [];
  let current = '';
  let inDollar = false;
  for (const line of sql.split('\n')) {
    const trimmed = line.trim();
    if (!inDollar && (trimmed.startsWith('--') || trimmed === '')) {
      if (current) current += '\n';
      continue;
    }
    current += `${line}\n`;
    const dollarCount = (line.match(/\$\$/g) ?? []).length;
    if (dollarCount % 2 === 1) inDollar = !inDollar;
    if (!inDollar && trimmed.endsWith(';')) {
      statements.push(current.trim());
      current = '';
    }
  }
  if (current.trim()) statements.push(current.trim());
  return statements;
}
