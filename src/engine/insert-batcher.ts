import type { WireMessages } from '../kernel/bus.ts';
import type { Db } from '../kernel/db.ts';
import { GroupCommit } from '../kernel/group-commit.ts';
import * as sql from './sql.ts';
import type { CreatedRun, InsertRun } from './sql.ts';

/** How the creator of a batch tells the others: in the insert statement itself (other processes), and after it (this one). */
export interface InsertAnnouncer {
  notifications(runs: readonly InsertRun[]): WireMessages | undefined;
  inserted(runs: CreatedRun[]): void;
}

interface Waiting {
  row: InsertRun;
  resolve: (run: CreatedRun) => void;
  reject: (err: unknown) => void;
}

/**
 * Group commit for run creation: the runs requested while earlier inserts are in flight are written
 * together, as one multi-row INSERT (one statement, so all or nothing, and no transaction round trips).
 * Under load the batches grow by themselves; a lone request waits only for the next turn of the event loop.
 * On PGlite a row costs several times less in a statement of 50 than alone (docs/decisions.md, "Group commit").
 */
export class RunInsertBatcher {
  readonly #db: Db;
  readonly #announcer: InsertAnnouncer;
  /**
   * One batch at a time on both engines (docs/decisions.md). The next batch is handed over as soon as one
   * ends, before its requests are answered, so the database is not left waiting for this thread. On PostgreSQL
   * each statement sent wakes a backend process, which on a small machine takes the CPU from this thread;
   * on PGlite a second batch in flight only made the batches smaller (one was faster).
   */
  readonly #groups: GroupCommit<Waiting>;

  constructor(db: Db, announcer: InsertAnnouncer, options: { maxBatch?: number; maxInFlight?: number } = {}) {
    this.#db = db;
    this.#announcer = announcer;
    this.#groups = new GroupCommit<Waiting>((batch, release) => this.#write(batch, release), {
      maxGroup: options.maxBatch ?? 200,
      maxInFlight: options.maxInFlight ?? 1,
    });
  }

  insert(row: InsertRun): Promise<CreatedRun> {
    return new Promise<CreatedRun>((resolve, reject) => this.#groups.add({ row, resolve, reject }));
  }

  async #write(batch: Waiting[], release: () => void): Promise<void> {
    const runs = batch.map((w) => w.row);
    let rows: CreatedRun[] | undefined;
    let failure: unknown;
    try {
      rows = await this.#insert(runs);
    } catch (err) {
      failure = err;
    }
    release();
    if (rows) {
      this.#settle(batch, rows);
    } else if (batch.length === 1) {
      batch[0]!.reject(failure);
    } else {
      // One bad row must not fail the others: write them one by one to find it.
      for (const waiting of batch) {
        try {
          this.#settle([waiting], await this.#insert([waiting.row]));
        } catch (err) {
          waiting.reject(err);
        }
      }
    }
  }

  #insert(runs: InsertRun[]): Promise<CreatedRun[]> {
    return sql.insertRuns(this.#db, runs, this.#announcer.notifications(runs));
  }

  #settle(batch: readonly Waiting[], rows: CreatedRun[]): void {
    const byId = new Map(rows.map((r) => [r.id, r]));
    for (const waiting of batch) {
      const run = byId.get(waiting.row.id);
      if (run) waiting.resolve(run);
      else waiting.reject(new Error(`run ${waiting.row.id} was not returned by its insert`));
    }
    this.#announcer.inserted(rows);
  }
}
