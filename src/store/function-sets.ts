/**
 * Database functions installed as a versioned step, after the migrations: a domain owns a set of functions
 * (one SQL text of `CREATE OR REPLACE FUNCTION` statements and a version), and the database records which
 * version of each set it holds. At start a set whose recorded version is older than the code's (or absent,
 * or the same version with another text) is installed again, the whole set in one transaction under the
 * migration lock, so processes starting together install it once and never see half a set.
 */
import { createHash } from 'node:crypto';
import type { Db, Queryable } from '../kernel/db.ts';
import { MIGRATION_LOCK_KEY, splitStatements } from './migrate.ts';

export interface FunctionSet {
  /** The set's name, unique in the database (the owning domain: `execution`). */
  readonly name: string;
  /** Raised with every change of `sql`; a database holding a newer version keeps it. */
  readonly version: number;
  /** `CREATE OR REPLACE FUNCTION` statements (and `DROP FUNCTION` where a signature changes). */
  readonly sql: string;
}

export interface InstalledSet {
  name: string;
  version: number;
  /** `installed`: this call installed it; `current`: it was already; `newer`: the database holds a newer version. */
  status: 'installed' | 'current' | 'newer';
}

interface RecordedSet {
  name: string;
  version: number;
  checksum: string;
}

export const checksumOf = (sql: string): string => createHash('sha256').update(sql).digest('hex');

/** Installs the sets the database lacks or holds in an older version; answers what each set is now. */
export async function installFunctionSets(db: Db, sets: readonly FunctionSet[]): Promise<InstalledSet[]> {
  const names = new Set<string>();
  for (const set of sets) {
    if (names.has(set.name)) throw new Error(`two function sets share the name ${set.name}`);
    names.add(set.name);
  }
  if (sets.length === 0) return [];
  return db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
    // under the lock: two first starts cannot race on creating the table
    await tx.query(`CREATE TABLE IF NOT EXISTS agentyard_function_sets (
      name text PRIMARY KEY,
      version integer NOT NULL,
      checksum text NOT NULL,
      installed_at timestamptz NOT NULL DEFAULT now()
    )`);
    const recorded = new Map(
      (await tx.query<RecordedSet>('SELECT name, version, checksum FROM agentyard_function_sets')).rows.map((r) => [
        r.name,
        r,
      ]),
    );
    const out: InstalledSet[] = [];
    for (const set of sets) out.push(await installOne(tx, set, recorded.get(set.name)));
    return out;
  });
}

async function installOne(tx: Queryable, set: FunctionSet, recorded: RecordedSet | undefined): Promise<InstalledSet> {
  const checksum = checksumOf(set.sql);
  const result = (status: InstalledSet['status']): InstalledSet => ({ name: set.name, version: set.version, status });
  if (recorded && recorded.version > set.version) return { ...result('newer'), version: recorded.version };
  if (recorded && recorded.version === set.version && recorded.checksum === checksum) return result('current');
  for (const statement of splitStatements(set.sql)) await tx.query(statement);
  await tx.query(
    `INSERT INTO agentyard_function_sets (name, version, checksum) VALUES ($1, $2, $3)
     ON CONFLICT (name) DO UPDATE SET version = EXCLUDED.version, checksum = EXCLUDED.checksum, installed_at = now()`,
    [set.name, set.version, checksum],
  );
  return result('installed');
}
