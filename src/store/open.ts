import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Db } from '../kernel/db.ts';
import { openPostgres } from './pg.ts';
import { openPgliteThread } from './pglite-thread.ts';

export interface OpenDatabaseOptions {
  databaseUrl: string | undefined;
  dataDir: string;
  schema?: string;
}

/** `DATABASE_URL` set → a PostgreSQL server through `pg`; otherwise PGlite in `<dataDir>/pgdata`, in a thread of its own. */
export async function openDatabase(options: OpenDatabaseOptions): Promise<Db> {
  if (options.databaseUrl) {
    return openPostgres({
      connectionString: options.databaseUrl,
      ...(options.schema ? { schema: options.schema } : {}),
    });
  }
  const dataDir = path.join(options.dataDir, 'pgdata');
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  return openPgliteThread({ dataDir, ...(options.schema ? { schema: options.schema } : {}) });
}
