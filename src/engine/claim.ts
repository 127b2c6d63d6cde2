/**
 * The run queue's one claim, for every executor kind: the service's executors (fair between teams), a
 * self-hosted worker (by worker ID and what its registration may receive) and the Kubernetes Job executor
 * (runs of Factories with `executor: kubernetes`, optionally of one namespace). A claim is one statement,
 * `ay_claim_runs` (functions.sql): it locks the runs to take with the lock function of the executor kind
 * (`FOR UPDATE SKIP LOCKED`), so that however many processes claim at once each run goes to exactly one; moves
 * them QUEUED → CLAIMED with the state machine's `claim` transition as a compare-and-set; creates their
 * executions with their leases; and reads what their assignments need. Claims are told on the bus
 * (`runs.lifecycle`, announce.ts).
 */
import type { Bus } from '../kernel/bus.ts';
import type { Db } from '../kernel/db.ts';
import { newId } from '../kernel/ids.ts';
import { emitLifecycle } from './announce.ts';
import type { RunRow } from './model.ts';
import type { ClaimInputs, ClaimParams, ClaimRow, ClaimTargetParams } from './sql.ts';
import * as sql from './sql.ts';
import { transitionFor } from './state-machine.ts';

/** Who claims: the executor kind and what narrows the queue for it. */
export type ClaimTarget =
  | { kind: 'service' }
  | { kind: 'worker'; teamId: string; workerId: string; registration: sql.WorkerRegistration }
  | {
      kind: 'kubernetes';
      /** `worker_host` values that mean "the service" (a run routed to another worker is left to it). */
      serviceHosts: readonly string[];
      /** Runs of this namespace's Factories only; undefined: every namespace. */
      namespace?: string | undefined;
    };

/**
 * The harnesses an executor runs: the spellings a run's `harness.type` may have (`oz`: the executor's default)
 * and, for each, the harness it stands for (the agent runtime knows the aliases: execution/settings.ts).
 */
export interface HarnessChoice<H extends string = string> {
  spellings: string[];
  types: H[];
}

export interface Claimed<H extends string = string> {
  run: RunRow;
  executionId: string;
  attempt: number;
  harness: H;
  /** What the assignment needs from the database, read by the claim. */
  inputs: ClaimInputs;
}

export interface ClaimOptions<H extends string = string> {
  limit: number;
  harnesses: HarnessChoice<H>;
  /** Who holds the lease (`service:<process>`, `worker:<id>/<connection>`, `kubernetes:<namespace>`). */
  executor: string;
  leaseMs: number;
}

const DATE_COLUMNS = ['created_at', 'updated_at', 'started_at', 'finished_at'] as const;

/** A run row read back from JSON (to_jsonb), its timestamps as Dates again. */
export function runFromJson(json: Record<string, unknown>): RunRow {
  const row = { ...json } as Record<string, unknown>;
  for (const c of DATE_COLUMNS) if (typeof row[c] === 'string') row[c] = new Date(row[c] as string);
  return row as unknown as RunRow;
}

function claimedFrom<H extends string>(rows: ClaimRow[]): Claimed<H>[] {
  return rows.map((row) => {
    const run = runFromJson(row.run);
    return {
      run,
      executionId: row.execution_id,
      attempt: Number(row.attempt),
      harness: row.harness as H,
      inputs: {
        run_id: run.id,
        previous: row.previous,
        followups: row.followups,
        attachments: row.attachments,
        factory: row.factory,
      },
    };
  });
}

const newExecutionIds = (n: number) => Array.from({ length: n }, () => newId('exe'));

/** A claim's parameters: `limit` new execution ids, the harnesses, the lease, the state machine's `claim`. */
function claimParams(limit: number, options: ClaimOptions<string>): ClaimParams {
  const t = transitionFor('claim');
  return {
    harnesses: options.harnesses.spellings,
    limit,
    executionIds: newExecutionIds(limit),
    harnessSpellings: options.harnesses.spellings,
    harnessTypes: options.harnesses.types,
    executor: options.executor,
    leaseMs: options.leaseMs,
    to: t.to,
    from: [...t.from],
  };
}

function targetParams(target: ClaimTarget): ClaimTargetParams {
  switch (target.kind) {
    case 'service':
      return {
        kind: 'service',
        team: null,
        worker: null,
        trusted: false,
        registrant: null,
        hosts: [],
        namespace: null,
      };
    case 'worker':
      return {
        kind: 'worker',
        team: target.teamId,
        worker: target.workerId,
        trusted: target.registration.trusted,
        registrant: target.registration.registrant,
        hosts: [],
        namespace: null,
      };
    case 'kubernetes':
      return {
        kind: 'kubernetes',
        team: null,
        worker: null,
        trusted: false,
        registrant: null,
        hosts: [...target.serviceHosts],
        namespace: target.namespace ?? null,
      };
  }
}

/** Tells this process that runs were claimed (`runs.lifecycle`). */
function told<H extends string>(bus: Bus | undefined, claimed: Claimed<H>[]): Claimed<H>[] {
  if (bus)
    emitLifecycle(
      bus,
      claimed.map((c) => ({ run_id: c.run.id, event: 'claimed', state: c.run.state })),
    );
  return claimed;
}

/** Claims up to `options.limit` queued runs for `target` (ay_claim_runs, functions.sql). */
export async function claimRuns<H extends string>(
  db: Db,
  bus: Bus | undefined,
  target: ClaimTarget,
  options: ClaimOptions<H>,
): Promise<Claimed<H>[]> {
  if (options.limit <= 0 || options.harnesses.spellings.length === 0) return [];
  const res = await sql.ayClaimRuns(db, targetParams(target), claimParams(options.limit, options));
  return told(bus, claimedFrom<H>(res.rows));
}

/**
 * Inserts runs (`records`: the JSON records of insertRunsParameter) and, in the same statement, claims up to
 * `limit` queued runs for this process's executors as a service claim does (ay_create_and_claim_service_runs,
 * functions.sql): the claim may take older runs of other teams before the new ones.
 */
export async function createAndClaimServiceRuns<H extends string>(
  db: Db,
  bus: Bus | undefined,
  records: string,
  options: ClaimOptions<H>,
): Promise<Claimed<H>[]> {
  const limit = options.harnesses.spellings.length === 0 ? 0 : Math.max(0, options.limit);
  const res = await sql.ayCreateAndClaimServiceRuns(db, records, claimParams(limit, options));
  return told(bus, claimedFrom<H>(res.rows));
}
