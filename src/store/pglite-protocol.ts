/**
 * Messages between the service's thread and the thread that runs PGlite (src/store/pglite-thread.ts and
 * src/store/pglite-worker.ts). Values cross by structured clone: Date, Uint8Array and plain objects keep
 * their types; a Buffer arrives as a Uint8Array, which PGlite reads as bytea all the same.
 */
import type { SqlValue } from './db.ts';

export interface PgliteWorkerData {
  /** Directory for the data files; in memory when absent. */
  dataDir?: string;
  /** A data directory dump (`PGlite.dumpDataDir`) to start from. */
  loadDataDir?: Uint8Array;
  schema?: string;
}

export type Request =
  | { op: 'query'; id: number; text: string; params?: readonly SqlValue[]; tx?: number }
  | { op: 'exec'; id: number; sql: string }
  | { op: 'begin'; id: number }
  | { op: 'end'; id: number; tx: number; commit: boolean }
  | { op: 'listen'; id: number; channel: string }
  | { op: 'unlisten'; id: number; subscription: number }
  | { op: 'close'; id: number };

export type Reply =
  | { kind: 'ready' }
  | { kind: 'failed-to-open'; error: SerializedError }
  | { kind: 'result'; id: number; rows?: unknown[]; rowCount?: number; value?: number }
  | { kind: 'error'; id: number; error: SerializedError }
  | { kind: 'notification'; subscription: number; payload: string };

/** An error's message and the fields callers read (`code`, `detail`, `constraint`, …), without its query parameters. */
export interface SerializedError {
  name: string;
  message: string;
  stack?: string;
  fields: Record<string, string | number | undefined>;
}

const ERROR_FIELDS = ['code', 'severity', 'detail', 'hint', 'position', 'where', 'schema', 'table', 'column', 'dataType', 'constraint', 'routine'] as const;

export function serializeError(err: unknown): SerializedError {
  if (!(err instanceof Error)) return { name: 'Error', message: String(err), fields: {} };
  const fields: SerializedError['fields'] = {};
  const source = err as unknown as Record<string, unknown>;
  for (const key of ERROR_FIELDS) {
    const value = source[key];
    if (typeof value === 'string' || typeof value === 'number') fields[key] = value;
  }
  return { name: err.name, message: err.message, ...(err.stack ? { stack: err.stack } : {}), fields };
}

export function deserializeError(serialized: SerializedError): Error {
  const err = new Error(serialized.message);
  err.name = serialized.name;
  if (serialized.stack) err.stack = serialized.stack;
  return Object.assign(err, serialized.fields);
}
