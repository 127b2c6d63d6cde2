/**
 * The execution queue's database functions (`functions.sql` beside this file: dispatch, claim, hand-off,
 * start, end), installed after the migrations by the versioned step of src/store/function-sets.ts.
 */
import { readFileSync } from 'node:fs';
import type { FunctionSet } from '../store/function-sets.ts';

/** Raise with every change of functions.sql: a database holding an older version gets the new set at start. */
export const EXECUTION_FUNCTIONS_VERSION = 10;

let sql: string | undefined;

export function executionFunctions(): FunctionSet {
  sql ??= readFileSync(new URL('./functions.sql', import.meta.url), 'utf8');
  return { name: 'execution', version: EXECUTION_FUNCTIONS_VERSION, sql };
}
