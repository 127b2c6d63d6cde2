import type { Logger } from '../kernel/log.ts';
import type { Db } from '../kernel/db.ts';
import { Loop } from '../kernel/loop.ts';

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

export const AUTOVACUUM_DEFAULTS: MaintenanceThresholds = {
  analyzeBase: 50,
  analyzeScale: 0.1,
  vacuumBase: 50,
  vacuumScale: 0.2,
};

export interface MaintenancePass {
  analyzed: string[];
  vacuumed: string[];
  /** Indexes given an empty free-space map (createIndexFreeSpaceMaps). */
  freeSpaceMaps?: string[];
  /** Bytes of WAL the checkpoint closed, when the pass made one. */
  checkpointed?: number;
}

/**
 * When a checkpoint is due, with PostgreSQL's own triggers scaled to one process: this much WAL written since
 * the last checkpoint began, or a checkpoint older than `maxAgeMs` (checkpoint_timeout) with WAL written since.
 */
export interface CheckpointPolicy {
  walBytes: number;
  maxAgeMs: number;
}

export const CHECKPOINT_DEFAULTS: CheckpointPolicy = { walBytes: 256 * 1024 * 1024, maxAgeMs: 5 * 60_000 };

/** A checkpoint record is ≈ 120 bytes; more WAL than this after it means something was written since. */
const CHECKPOINT_RECORD_BYTES = 1024;

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
 * instead of the primary key, growing with the table (docs/decisions.md) — and without VACUUM the rows that
 * updates and purges leave behind are never reclaimed.
 * One pass does what autovacuum would for the tables of the current schema that are due, then what the
 * checkpointer would (checkpointIfDue).
 */
export async function maintainTables(
  db: Db,
  thresholds: MaintenanceThresholds = AUTOVACUUM_DEFAULTS,
  checkpoints: CheckpointPolicy = CHECKPOINT_DEFAULTS,
): Promise<MaintenancePass> {
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
  const freeSpaceMaps = await createIndexFreeSpaceMaps(db);
  if (freeSpaceMaps.length > 0) pass.freeSpaceMaps = freeSpaceMaps;
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
  const checkpointed = await checkpointIfDue(db, checkpoints);
  if (checkpointed !== undefined) pass.checkpointed = checkpointed;
  return pass;
}

/**
 * A btree's free-space map (its FSM fork) exists only once VACUUM has recycled one of its pages; until then
 * PostgreSQL looks for the file again at every page split (GetFreeIndexPage, then smgrexists, an open(2) that
 * fails). On PGlite that failed open is a thrown JavaScript exception and a path walk in Emscripten's file
 * system, a cost under ingress load (docs/decisions.md), mostly for the delivery log's identity index,
 * whose random keys split pages all the time. Gives each btree index of the current schema that has no map an
 * empty one, a single zeroed page, which PostgreSQL reads as a map page with no free space recorded (as it
 * reads a page a crash left zeroed) and fills in as pages are freed. The page is written by the server itself,
 * from a large object exported into the data directory (`lo_export` runs as the superuser PGlite is).
 * Answers the indexes that got one.
 */
export async function createIndexFreeSpaceMaps(db: Db): Promise<string[]> {
  const missing = await db.query<{ index: string; path: string }>(
    `SELECT c.relname AS index, current_setting('data_directory') || '/' || pg_relation_filepath(c.oid) || '_fsm' AS path
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_am a ON a.oid = c.relam
      WHERE c.relkind = 'i' AND a.amname = 'btree' AND c.relpersistence = 'p' AND n.nspname = current_schema()
        AND pg_relation_size(c.oid, 'fsm') = 0
      ORDER BY c.relname`,
  );
  if (missing.rows.length === 0) return [];
  const page = await db.query<{ lo: number }>(
    `SELECT lo_from_bytea(0, decode(repeat('00', current_setting('block_size')::int), 'hex')) AS lo`,
  );
  const lo = page.rows[0]!.lo;
  try {
    for (const { path } of missing.rows) await db.query('SELECT lo_export($1, $2)', [lo, path]);
  } finally {
    await db.query('SELECT lo_unlink($1)', [lo]);
  }
  return missing.rows.map((r) => r.index);
}

/**
 * PGlite's single-user PostgreSQL never checkpoints by itself (the checkpointer is a process it does not have):
 * its WAL would grow without end, and a restart after a crash would replay all of it. Makes a checkpoint when
 * one is due; answers the bytes of WAL it closed, or undefined. After a checkpoint PostgreSQL recycles the WAL
 * segments before it, so new segments stop being created (and zero-filled) as well.
 */
export async function checkpointIfDue(
  db: Db,
  policy: CheckpointPolicy = CHECKPOINT_DEFAULTS,
): Promise<number | undefined> {
  const res = await db.query<{ since_redo: number; since_checkpoint: number; age_ms: number }>(
    `SELECT (pg_current_wal_lsn() - redo_lsn)::float8 AS since_redo,
            (pg_current_wal_lsn() - checkpoint_lsn)::float8 AS since_checkpoint,
            (extract(epoch FROM clock_timestamp() - checkpoint_time) * 1000)::float8 AS age_ms
       FROM pg_control_checkpoint()`,
  );
  const wal = res.rows[0];
  if (!wal) return undefined;
  const due =
    wal.since_redo >= policy.walBytes ||
    (wal.age_ms >= policy.maxAgeMs && wal.since_checkpoint > CHECKPOINT_RECORD_BYTES);
  if (!due) return undefined;
  await db.exec('CHECKPOINT');
  return wal.since_redo;
}

/**
 * How often the WAL is looked at between passes: one read of pg_control_checkpoint(). At full ingress rate a
 * minute writes more than a gigabyte of WAL; looked at only with the tables, the WAL would reach that much before
 * each checkpoint, on disk, where every few seconds keeps it near CHECKPOINT_DEFAULTS.walBytes.
 */
export const CHECKPOINT_CHECK_MS = 5_000;

export interface MaintenanceSchedule {
  /** Between passes of maintainTables. */
  intervalMs: number;
  /** Between looks at the WAL (checkpointIfDue); CHECKPOINT_CHECK_MS by default, never longer than intervalMs. */
  checkpointCheckMs?: number;
  checkpoints?: CheckpointPolicy;
}

/**
 * Runs createIndexFreeSpaceMaps at once, `maintainTables` every `intervalMs`, and `checkpointIfDue` every
 * `checkpointCheckMs` between passes (never two at once); answers the function that stops them and waits for the
 * work under way.
 */
export function startTableMaintenance(db: Db, log: Logger, schedule: MaintenanceSchedule): () => Promise<void> {
  const { intervalMs, checkpoints = CHECKPOINT_DEFAULTS } = schedule;
  const checkpointCheckMs = Math.min(intervalMs, schedule.checkpointCheckMs ?? CHECKPOINT_CHECK_MS);
  let running: Promise<void> | undefined;
  const start = (work: () => Promise<MaintenancePass>) => {
    if (running) return;
    const started = performance.now();
    running = work()
      .then((done) => {
        if (
          done.analyzed.length ||
          done.vacuumed.length ||
          done.checkpointed !== undefined ||
          done.freeSpaceMaps?.length
        ) {
          // The free-space maps are made for every index at start: their count, not seventy names.
          const { freeSpaceMaps, ...rest } = done;
          log.info(
            {
              ...rest,
              ...(freeSpaceMaps?.length ? { freeSpaceMaps: freeSpaceMaps.length } : {}),
              ms: Math.round(performance.now() - started),
            },
            'maintained tables (ANALYZE/VACUUM/CHECKPOINT/free-space maps)',
          );
        }
      })
      .catch((err: unknown) => log.warn({ err }, 'table maintenance failed'))
      .finally(() => (running = undefined));
  };
  const passes = new Loop({
    name: 'table maintenance',
    everyMs: intervalMs,
    atStart: false,
    pass: () => start(() => maintainTables(db, AUTOVACUUM_DEFAULTS, checkpoints)),
  }).start();
  const checks = new Loop({
    name: 'checkpoint check',
    everyMs: checkpointCheckMs,
    atStart: false,
    pass: () =>
      start(async () => {
        const checkpointed = await checkpointIfDue(db, checkpoints);
        return { analyzed: [], vacuumed: [], ...(checkpointed !== undefined ? { checkpointed } : {}) };
      }),
  }).start();
  // the indexes' free-space maps at once, rather than a whole interval into the process's life
  start(async () => {
    const freeSpaceMaps = await createIndexFreeSpaceMaps(db);
    return { analyzed: [], vacuumed: [], ...(freeSpaceMaps.length > 0 ? { freeSpaceMaps } : {}) };
  });
  return async () => {
    await Promise.all([passes.stop(), checks.stop()]);
    await running;
  };
}
