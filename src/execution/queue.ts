/**
 * The run queue: claiming queued runs for the service's executors (fair between teams) and for self-hosted
 * workers (by worker ID). A claim is one statement: it locks the runs to take (`FOR UPDATE SKIP LOCKED`, in
 * src/execution/functions.sql), so that however many processes claim at once each run goes to exactly
 * one; moves them QUEUED → CLAIMED with the state machine's `claim` transition as a compare-and-set; creates
 * their executions with their leases; and reads what their assignments need (ay_claim_service_runs and
 * ay_claim_worker_runs over the lock functions: planned once per connection, one round trip).
 */
import type { RunRow } from '../runs/model.ts';
import { transitionFor } from '../runs/state-machine.ts';
import type { Db } from '../kernel/db.ts';
import { newId } from '../kernel/ids.ts';
import type { AssignmentInputs } from './assignment-builder.ts';
import type { HarnessType } from './settings.ts';
import { harnessFor, harnessSpellings } from './settings.ts';
import type { ClaimParams, ClaimRow } from './sql.ts';
import * as sql from './sql.ts';

export interface Claimed {
  run: RunRow;
  executionId: string;
  attempt: number;
  harness: HarnessType;
  /** What the assignment needs from the database, read by the claim. */
  inputs: AssignmentInputs;
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

const DATE_COLUMNS = ['created_at', 'updated_at', 'started_at', 'finished_at'] as const;

/** A run row read back from JSON (to_jsonb), its timestamps as Dates again. */
export function runFromJson(json: Record<string, unknown>): RunRow {
  const row = { ...json } as Record<string, unknown>;
  for (const c of DATE_COLUMNS) if (typeof row[c] === 'string') row[c] = new Date(row[c] as string);
  return row as unknown as RunRow;
}

function claimedFrom(rows: ClaimRow[]): Claimed[] {
  return rows.map((row) => {
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

/** The harness spellings a claim takes, and the harness each stands for. */
function harnessParams(options: ClaimOptions): { spellings: string[]; types: HarnessType[] } {
  const spellings = harnessSpellings(options.harnesses, options.defaultHarness);
  return { spellings, types: spellings.map((s) => harnessFor(s, options.defaultHarness)!) };
}

const newExecutionIds = (n: number) => Array.from({ length: n }, () => newId('exe'));

/** A claim's parameters: `limit` new execution ids, the harnesses, the lease, the state machine's `claim`. */
function claimParams(limit: number, spellings: string[], types: HarnessType[], options: ClaimOptions): ClaimParams {
  const t = transitionFor('claim');
  return {
    harnesses: spellings,
    limit,
    executionIds: newExecutionIds(limit),
    harnessSpellings: spellings,
    harnessTypes: types,
    executor: options.executor,
    leaseMs: options.leaseMs,
    to: t.to,
    from: [...t.from],
  };
}

/** Claims up to `limit` queued runs for this process's executors (ay_claim_service_runs, functions.sql). */
export async function claimServiceRuns(db: Db, options: ClaimOptions): Promise<Claimed[]> {
  const { spellings, types } = harnessParams(options);
  if (options.limit <= 0 || spellings.length === 0) return [];
  const res = await sql.ayClaimServiceRuns(db, claimParams(options.limit, spellings, types, options));
  return claimedFrom(res.rows);
}

/**
 * Inserts runs (`records`: the JSON records of runs/sql.ts insertRunsParameter) and, in the same statement, claims up to
 * `limit` queued runs for this process's executors as claimServiceRuns does (ay_create_and_claim_service_runs,
 * functions.sql): the claim may take older runs of other teams before the new ones.
 */
export async function createAndClaimServiceRuns(db: Db, records: string, options: ClaimOptions): Promise<Claimed[]> {
  const { spellings, types } = harnessParams(options);
  const limit = spellings.length === 0 ? 0 : Math.max(0, options.limit);
  const res = await sql.ayCreateAndClaimServiceRuns(db, records, claimParams(limit, spellings, types, options));
  return claimedFrom(res.rows);
}

/** Claims up to `limit` queued runs of the team whose `worker_host` is the worker's ID (ay_claim_worker_runs). */
export async function claimWorkerRuns(
  db: Db,
  teamId: string,
  workerId: string,
  registration: sql.WorkerRegistration,
  options: ClaimOptions,
): Promise<Claimed[]> {
  const { spellings, types } = harnessParams(options);
  if (options.limit <= 0 || spellings.length === 0) return [];
  const res = await sql.ayClaimWorkerRuns(
    db,
    teamId,
    workerId,
    registration,
    claimParams(options.limit, spellings, types, options),
  );
  return claimedFrom(res.rows);
}
