/**
 * One database interface over two engines: a PostgreSQL server through `pg`, or PGlite (PostgreSQL compiled
 * to WebAssembly, in process). Every module speaks PostgreSQL SQL through this interface only.
 */
export type SqlValue = string | number | boolean | null | Date | Buffer | Uint8Array | readonly unknown[] | object;

export interface QueryResult<Row> {
  rows: Row[];
  rowCount: number;
}

export interface Queryable {
  query<Row = Record<string, unknown>>(text: string, params?: readonly SqlValue[]): Promise<QueryResult<Row>>;
}

export interface Db extends Queryable {
  readonly engine: 'postgres' | 'pglite';
  /** Runs `fn` in one transaction on one connection; commits when it resolves, rolls back when it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /** Runs several statements separated by semicolons (no parameters). */
  exec(sql: string): Promise<void>;
  /** LISTEN on a channel; resolves to an unsubscribe function. */
  listen(channel: string, onPayload: (payload: string) => void): Promise<() => Promise<void>>;
  notify(channel: string, payload: string): Promise<void>;
  close(): Promise<void>;
  /**
   * Calls `listener` once, with the cause, if the engine stops for good without close() (at once if it
   * already has); returns the removal. Only the PGlite thread can: a PostgreSQL pool replaces a lost
   * connection, and in-process PGlite lives as long as the process.
   */
  onLost(listener: (cause: Error) => void): () => void;
}

export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
