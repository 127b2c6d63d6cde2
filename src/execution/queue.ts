/**
 * The run queue: claiming queued runs for the service's executors (fair between teams) and for self-hosted
 * workers (by worker ID). A claim is one statement: it locks the runs to take (`FOR UPDATE SKIP LOCKED`, in
 * the functions of migration 0033), so that however many processes claim at once each run goes to exactly
 * one; moves them QUEUED → CLAIMED with the state machine's `claim` transition as a compare-and-set; creates
 * their executions with their leases; and reads what their plans need (ay_claim_locked: planned once per
 * connection, one round trip).
 */
import type { RunRow } from '../runs/model.ts';
import { transitionFor } from '../runs/state-machine.ts';
import type { Db, SqlValue } from '../store/db.ts';
import { newId } from '../util/ids.ts';
import type { PlanInputs } from './plan-builder.ts';
import type { HarnessType } from './settings.ts';
import { harnessFor, harnessSpellings } from './settings.ts';

export interface Claimed {
  run: RunRow;
  executionId: string;
  attempt: number;
  harness: HarnessType;
  /** What the plan needs from the database, read by the claim. */
  inputs: PlanInputs;
}

export interface ClaimOptions {
  limit: number;
  harnesses: readonly HarnessType[];
  defaultHarness: HarnessType | undefined;
  /** Who holds the lease (`service:<process>` or `worker:<id>/<connection>`). */
  executor: string;
  workerId?: string;
  leaseMs: number;
}

interface ClaimRow {
  run: Record<string, unknown>;
  execution_id: string;
  attempt: number;
  harness: HarnessType;
  previous: PlanInputs['previous'];
  followups: PlanInputs['followups'];
  attachments: PlanInputs['attachments'];
}

const DATE_COLUMNS = ['created_at', 'updated_at', 'started_at', 'finished_at'] as const;

/** A run row read back from JSON (to_jsonb), its timestamps as Dates again. */
function runFromJson(json: Record<string, unknown>): RunRow {
  const row = { ...json } as Record<string, unknown>;
  for (const c of DATE_COLUMNS) if (typeof row[c] === 'string') row[c] = new Date(row[c] as string);
  return row as unknown as RunRow;
}

/**
 * `lock` calls a lock function of migration 0033; its parameters follow the statement's 8. The claim itself
 * is ay_claim_locked, with the state machine's `claim` transition.
 */
async function claim(db: Db, lock: { call: string; params: SqlValue[] }, options: ClaimOptions): Promise<Claimed[]> {
  const spellings = harnessSpellings(options.harnesses, options.defaultHarness);
  const types = spellings.map((s) => harnessFor(s, options.defaultHarness)!);
  const t = transitionFor('claim');
  const res = await db.query<ClaimRow>(
    `WITH l AS MATERIALIZED (SELECT * FROM ${lock.call} WITH ORDINALITY AS l(out_id, out_harness, out_attempt, ord))
     SELECT c.* FROM ay_claim_locked(
       ARRAY(SELECT out_id FROM l ORDER BY ord), ARRAY(SELECT out_harness FROM l ORDER BY ord), ARRAY(SELECT out_attempt FROM l ORDER BY ord),
       $1::text[], $2::text[], $3::text[], $4, $5, $6::int, $7, $8::text[]) AS c`,
    [
      Array.from({ length: options.limit }, () => newId('exe')),
      spellings,
      types,
      options.executor,
      options.workerId ?? null,
      options.leaseMs,
      t.to,
      [...t.from],
      ...lock.params,
    ],
  );
  return res.rows.map((row) => {
    const run = runFromJson(row.run);
    return {
      run,
      executionId: row.execution_id,
      attempt: Number(row.attempt),
      harness: row.harness,
      inputs: { run_id: run.id, previous: row.previous, followups: row.followups, attachments: row.attachments },
    };
  });
}

/** Claims up to `limit` queued runs for this process's executors. */
export async function claimServiceRuns(db: Db, options: ClaimOptions): Promise<Claimed[]> {
  const spellings = harnessSpellings(options.harnesses, options.defaultHarness);
  if (options.limit <= 0 || spellings.length === 0) return [];
  return claim(db, { call: 'ay_lock_service_runs($9::text[], $10::int)', params: [spellings, options.limit] }, options);
}

/** Claims up to `limit` queued runs of the team whose `worker_host` is the worker's ID. */
export async function claimWorkerRuns(db: Db, teamId: string, workerId: string, options: ClaimOptions): Promise<Claimed[]> {
  const spellings = harnessSpellings(options.harnesses, options.defaultHarness);
  if (options.limit <= 0 || spellings.length === 0) return [];
  return claim(
    db,
    { call: 'ay_lock_worker_runs($9, $10, $11::text[], $12::int)', params: [teamId, workerId, spellings, options.limit] },
    { ...options, workerId },
  );
}
