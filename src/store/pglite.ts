import { PGlite } from '@electric-sql/pglite';
import type { Results } from '@electric-sql/pglite';
import type { Db, QueryResult, Queryable, SqlValue } from '../kernel/db.ts';
import { quoteIdent } from '../kernel/db.ts';
import { PgliteStatements } from './pglite-statements.ts';

export interface PgliteOptions {
  /** Directory for the data files; in memory when absent. */
  dataDir?: string;
  schema?: string;
}

/** PGlite counts the rows a statement returned or changed differently from `pg`: `rowCount` as `pg` has it. */
function queryResult<Row>(res: Results<Row>): QueryResult<Row> {
  return { rows: res.rows, rowCount: res.rows.length > 0 ? res.rows.length : (res.affectedRows ?? 0) };
}

/** Wraps an already open PGlite instance (tests share one instance between several schemas). */
export async function wrapPglite(pglite: PGlite, schema?: string, ownsInstance = true): Promise<Db> {
  // PGlite is one connection: a schema is selected per statement batch, never left to connection state
  // another wrapper could change.
  const searchPath = schema ? `SET search_path TO ${quoteIdent(schema)}, public;` : '';
  if (schema) await pglite.exec(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`);
  const shared = !ownsInstance && schema !== undefined;

  const run = async <Row>(
    q: Pick<PGlite, 'query' | 'exec'>,
    text: string,
    params?: readonly SqlValue[],
  ): Promise<QueryResult<Row>> => queryResult(await q.query<Row>(text, params as unknown[] | undefined));

  if (schema && !shared) await pglite.exec(searchPath);
  // a prepared statement is planned for the search path of its time: only a wrapper that owns it uses them
  const statements = shared ? undefined : new PgliteStatements(pglite);

  const db: Db = {
    engine: 'pglite',
    async query<Row>(text: string, params?: readonly SqlValue[]) {
      if (statements) return queryResult(await statements.query<Row>(text, params));
      return pglite.transaction(async (tx) => {
        await tx.exec(searchPath);
        return run(tx, text, params);
      });
    },
    async transaction(fn) {
      return pglite.transaction(async (tx) => {
        if (shared) await tx.exec(searchPath);
        const q: Queryable = { query: (text, params) => run(tx, text, params) };
        return fn(q);
      });
    },
    async exec(sql) {
      if (shared) {
        await pglite.transaction(async (tx) => {
          await tx.exec(searchPath + sql);
        });
        return;
      }
      await pglite.exec(sql);
    },
    async listen(channel, onPayload) {
      const unsub = await pglite.listen(channel, onPayload);
      return async () => {
        await unsub();
      };
    },
    async notify(channel, payload) {
      await pglite.query('SELECT pg_notify($1, $2)', [channel, payload]);
    },
    async close() {
      if (ownsInstance) await pglite.close();
    },
    onLost: () => () => {},
  };
  return db;
}

export async function openPglite(options: PgliteOptions): Promise<Db> {
  const pglite = await PGlite.create(options.dataDir ? { dataDir: options.dataDir } : {});
  return wrapPglite(pglite, options.schema, true);
}
