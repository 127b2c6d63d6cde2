import pg from 'pg';
import type { Db, QueryResult, Queryable, SqlValue } from './db.ts';
import { quoteIdent } from './db.ts';

// int8 (bigserial counters, sizes) fits in a double for every value this service stores.
pg.types.setTypeParser(20, (v) => Number(v));

export interface PgOptions {
  connectionString: string;
  /** Schema to use for every connection (tests isolate themselves this way). */
  schema?: string;
  maxConnections?: number;
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

  const query = async <Row>(client: pg.Pool | pg.PoolClient, text: string, params?: readonly SqlValue[]): Promise<QueryResult<Row>> => {
    const res = await client.query(text, params as unknown[] | undefined);
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
  };
  return db;
}
