import type { FastifyBaseLogger } from 'fastify';
import type { Db } from './db.ts';

/**
 * When a table is due, with PostgreSQL's autovacuum defaults: more rows changed since the last ANALYZE than
 * 50 + 10% of the table, more dead rows than 50 + 20% of it.
 */
export interface MaintenanceThresholds {
  analyzeBase: number;
  analyzeScale: number;
  vacuumBase: number;
  vacuumScale: number;
}

export const AUTOVACUUM_DEFAULTS: MaintenanceThresholds = { analyzeBase: 50, analyzeScale: 0.1, vacuumBase: 50, vacuumScale: 0.2 };

export interface MaintenancePass {
  analyzed: string[];
  vacuumed: string[];
}

interface TableActivity {
  relname: string;
  n_dead_tup: number;
  n_mod_since_analyze: number;
  reltuples: number;
}

const quoteIdent = (name: string): string => `"${name.replaceAll('"', '""')}"`;

/**
 * PGlite runs PostgreSQL in single-user mode, which has no autovacuum: without this, nothing ever runs ANALYZE
 * or VACUUM. Without ANALYZE the planner keeps the plans it made while the tables were small — a prepared
 * look-up of a run by id planned on an empty database kept reading every run of the team through another index
 * (≈ 25 ms at 300,000 runs instead of ≈ 0.5 ms through the primary key) — and without VACUUM the rows that
 * updates and purges leave behind are never reclaimed.
 * One pass does what autovacuum would for the tables of the current schema that are due.
 */
export async function maintainTables(db: Db, thresholds: MaintenanceThresholds = AUTOVACUUM_DEFAULTS): Promise<MaintenancePass> {
  // the activity counters are reported at most once a second; the pass should see the latest
  await db.query('SELECT pg_stat_force_next_flush()');
  const res = await db.query<TableActivity>(
    `SELECT s.relname, s.n_dead_tup::float8 AS n_dead_tup, s.n_mod_since_analyze::float8 AS n_mod_since_analyze,
            greatest(c.reltuples, 0)::float8 AS reltuples
       FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
      WHERE s.schemaname = current_schema()
      ORDER BY s.relname`,
  );
  const pass: MaintenancePass = { analyzed: [], vacuumed: [] };
  for (const table of res.rows) {
    const vacuum = table.n_dead_tup > thresholds.vacuumBase + thresholds.vacuumScale * table.reltuples;
    const analyze = table.n_mod_since_analyze > thresholds.analyzeBase + thresholds.analyzeScale * table.reltuples;
    if (vacuum) {
      await db.exec(`VACUUM (ANALYZE) ${quoteIdent(table.relname)}`);
      pass.vacuumed.push(table.relname);
      pass.analyzed.push(table.relname);
    } else if (analyze) {
      await db.exec(`ANALYZE ${quoteIdent(table.relname)}`);
      pass.analyzed.push(table.relname);
    }
  }
  return pass;
}

/**
 * Runs `maintainTables` every `intervalMs` (never two passes at once); answers the function that stops it and
 * waits for a pass under way.
 */
export function startTableMaintenance(db: Db, log: FastifyBaseLogger, intervalMs: number): () => Promise<void> {
  let running: Promise<void> | undefined;
  const pass = () => {
    if (running) return;
    const started = performance.now();
    running = maintainTables(db)
      .then((done) => {
        if (done.analyzed.length || done.vacuumed.length) {
          log.info({ ...done, ms: Math.round(performance.now() - started) }, 'maintained tables (ANALYZE/VACUUM)');
        }
      })
      .catch((err: unknown) => log.warn({ err }, 'table maintenance failed'))
      .finally(() => (running = undefined));
  };
  const timer = setInterval(pass, intervalMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}
