/**
 * The database's schema as this release wants it: the numbered migrations (src/store/migrations/), then each
 * domain's function set, installed when the database holds an older version (src/store/function-sets.ts).
 */
import type { Db } from './kernel/db.ts';
import { executionFunctions } from './engine/functions.ts';
import type { FunctionSet, InstalledSet } from './store/function-sets.ts';
import { installFunctionSets } from './store/function-sets.ts';
import type { MigrateResult } from './store/migrate.ts';
import { migrate } from './store/migrate.ts';

/** Every domain's function set, in install order. */
export function functionSets(): FunctionSet[] {
  return [executionFunctions()];
}

export interface PrepareResult extends MigrateResult {
  functions: InstalledSet[];
}

/** Migrates the database and installs the function sets it lacks. */
export async function prepareDatabase(db: Db): Promise<PrepareResult> {
  const migrated = await migrate(db);
  const functions = await installFunctionSets(db, functionSets());
  return { ...migrated, functions };
}
