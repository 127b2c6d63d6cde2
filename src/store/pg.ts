import { createHash } from 'node:crypto';
import pg from 'pg';
import type { Db, QueryResult, Queryable, SqlValue } from '../kernel/db.ts';
import { quoteIdent } from '../kernel/db.ts';

// int8 (bigserial counters, sizes) fits in a double for every value this service stores.
pg.types.setTypeParser(20, (v) => Number(v));

export interface PgOptions {
  connectionString: string;
  /** Schema to use for every connection (tests isolate themselves this way). */
  schema?: string;
  maxConnections?: number;
  /**
   * Statements run as named prepared statements once seen twice (default true): parsed and planned once per
   * connection instead of on every call. Off (here, or AGENTYARD_PG_PREPARED_STATEMENTS=off) for a connection
   * pooler that does not keep them (PgBouncer in transaction mode before 1.21).
   */
  preparedStatements?: boolean;
}

/** Distinct statement texts prepared by a process, at most: statements built with varying text stay unnamed. */
const MAX_PREPARED = 400;
/** Distinct texts remembered as seen once, at most. */
const MAX_SEEN = 4_000;

/**
 * Names statements worth preparing: a text seen a second time gets a name derived from it (the same text has
 * the same name on every connection; `pg` parses it once per connection). A text whose prepared plan stopped
 * matching the schema (a migration changed a table under a `SELECT *`) is not prepared again.
 */
class StatementNames {
  readonly #names = new Map<string, string | false>();
  readonly #seen = new Set<string>();

  nameOf(text: string): string | undefined {
    const name = this.#names.get(text);
    if (name !== undefined) return name || undefined;
    if (!this.#seen.has(text)) {
      if (this.#seen.size < MAX_SEEN) this.#seen.add(text);
      return undefined;
    }
    if (this.#names.size >= MAX_PREPARED) return undefined;
    const created = `ay_${createHash('sha1').update(text).digest('hex').slice(0, 24)}`;
    this.#names.set(text, created);
    this.#seen.delete(text);
    return created;
  }

  forget(text: string): void {
    this.#names.set(text, false);
  }
}

/** PostgreSQL refuses to run a prepared plan whose result columns changed since it was prepared. */
function isStalePlan(err: unknown): boolean {
  return (
    (err as { code?: string }).code === '0A000' &&
    /cached plan must not change result type/.test(String((err as Error).message))
  );
}

export async function openPostgres(options: PgOptions): Promise<Db> {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.maxConnections ?? 20,
    ...(options.schema ? { options: `-c search_path=${quoteIdent(options.schema)},public` } : {}),
  });
  // An idle client that loses its server must not crash the process; the pool replaces it.
  pool.on('error', () => {});
  const listenClients = new Map<string, pg.Client>();

  const prepared = options.preparedStatements ?? process.env.AGENTYARD_PG_PREPARED_STATEMENTS !== 'off';
  const names = prepared ? new StatementNames() : undefined;
  const query = async <Row>(
    client: pg.Pool | pg.PoolClient,
    text: string,
    params?: readonly SqlValue[],
  ): Promise<QueryResult<Row>> => {
    const values = params as unknown[] | undefined;
    // only statements with parameters: a text without any may hold several statements, which cannot be prepared
    const name = values?.length ? names?.nameOf(text) : undefined;
    let res: pg.QueryResult;
    try {
      res = await client.query(name ? { name, text, values } : { text, values });
    } catch (err) {
      // a migration of another process changed a table under a `SELECT *`: from now on unnamed (inside a
      // transaction the error has aborted it; the caller's next attempt runs unnamed)
      if (!name || !isStalePlan(err)) throw err;
      names!.forget(text);
      if (client instanceof pg.Pool) res = await client.query({ text, values });
      else throw err;
    }
    return { rows: res.rows as Row[], rowCount: res.rowCount ?? 0 };
  };

  const db: Db = {
    engine: 'postgres',
    query: (text, params) => query(pool, text, params),
    async transaction(fn) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const tx: Queryable = { query: (text, params) => query(client, text, params) };
        const result = await fn(tx);
        await client.query('COMMIT');
        return result;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {});
        throw err;
      } finally {
        client.release();
      }
    },
    async exec(sql) {
      await pool.query(sql);
    },
    async listen(channel, onPayload) {
      const client = new pg.Client({ connectionString: options.connectionString });
      client.on('error', () => {});
      await client.connect();
      client.on('notification', (msg) => {
        if (msg.channel === channel) onPayload(msg.payload ?? '');
      });
      await client.query(`LISTEN ${quoteIdent(channel)}`);
      const key = `${channel}:${Math.random()}`;
      listenClients.set(key, client);
      return async () => {
        listenClients.delete(key);
        await client.end().catch(() => {});
      };
    },
    async notify(channel, payload) {
      await pool.query('SELECT pg_notify($1, $2)', [channel, payload]);
    },
    async close() {
      await Promise.all([...listenClients.values()].map((c) => c.end().catch(() => {})));
      listenClients.clear();
      await pool.end();
    },
    onLost: () => () => {},
  };
  return db;
}
