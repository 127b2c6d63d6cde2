/**
 * Messages between the service's thread and the thread that runs PGlite (src/store/pglite-thread.ts and
 * src/store/pglite-worker.ts). Values cross by structured clone: Date and plain objects keep their types;
 * bytes (a Buffer or Uint8Array parameter) cross as a one-byte string, see encodeParams.
 */
import type { SqlValue } from '../kernel/db.ts';

/** Bytes held as their latin1 string on PGlite's thread, written into the Bind message as they are. */
export class Latin1Bytes {
  readonly latin1: string;

  constructor(latin1: string) {
    this.latin1 = latin1;
  }

  get length(): number {
    return this.latin1.length;
  }
}

/**
 * The parameters of a query as they cross to PGlite's thread. Bytes (a Buffer or Uint8Array) cross as their
 * latin1 string (one character per byte, exact for any bytes), their positions listed in `bytesAt`. A
 * Uint8Array would arrive as a new ArrayBuffer, and V8 counts ArrayBuffer bytes allocated since the last
 * mark-compact against the old generation's headroom, so a steady flow of payloads kept PGlite's thread in full
 * mark-compacts (docs/decisions.md, "Bytes cross to PGlite's thread as strings"). A string lives on the young
 * generation and dies in a scavenge.
 */
export function encodeParams(params: readonly SqlValue[]): { params: SqlValue[]; bytesAt?: number[] } {
  const bytesAt: number[] = [];
  const encoded = params.map((value, i) => {
    if (!(value instanceof Uint8Array)) return value;
    bytesAt.push(i);
    return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('latin1');
  });
  return bytesAt.length > 0 ? { params: encoded, bytesAt } : { params: encoded };
}

/**
 * The parameters of a query as PGlite's thread runs them: bytes stay a string until they are written into
 * the Bind message (Latin1Bytes), or become a Buffer for `PGlite.query` (`asBuffers`, inside a transaction).
 */
export function decodeParams(
  params: readonly SqlValue[],
  bytesAt: readonly number[] | undefined,
  asBuffers: boolean,
): readonly SqlValue[] {
  if (!bytesAt) return params;
  const decoded = [...params];
  for (const i of bytesAt) {
    const latin1 = decoded[i] as string;
    decoded[i] = asBuffers ? Buffer.from(latin1, 'latin1') : new Latin1Bytes(latin1);
  }
  return decoded;
}

export interface PgliteWorkerData {
  /** Directory for the data files; in memory when absent. */
  dataDir?: string;
  /** A data directory dump (`PGlite.dumpDataDir`) to start from. */
  loadDataDir?: Uint8Array;
  schema?: string;
  /** PGlite's WebAssembly, compiled once per process (set by openPgliteThread, see compiledPglite). */
  wasm?: CompiledPglite;
}

/** Compiled `WebAssembly.Module`s, opaque here: the project's `lib` has no WebAssembly types. */
export interface CompiledPglite {
  pglite: object;
  initdb: object;
}

export type Request =
  /** `bytesAt`: the positions in `params` of bytes, sent as latin1 strings (encodeParams). */
  | { op: 'query'; id: number; text: string; params?: readonly SqlValue[]; bytesAt?: number[]; tx?: number }
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

const ERROR_FIELDS = [
  'code',
  'severity',
  'detail',
  'hint',
  'position',
  'where',
  'schema',
  'table',
  'column',
  'dataType',
  'constraint',
  'routine',
] as const;

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
