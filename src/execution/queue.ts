/**
 * The run queue: claiming queued runs for the service's executors (fair between teams) and for self-hosted
 * workers (by worker ID). A claim locks the runs it takes (`FOR UPDATE SKIP LOCKED`), so that however many
 * processes claim at once each run goes to exactly one; it creates the run's execution with its lease and
 * moves the run QUEUED → CLAIMED through the state machine.
 */
import { applyRunEvent } from '../runs/plans.ts';
import type { RunRow } from '../runs/model.ts';
import type { Db, Queryable } from '../store/db.ts';
import { newId } from '../util/ids.ts';
import type { HarnessType } from './settings.ts';
import { harnessFor, harnessSpellings } from './settings.ts';

export interface Claimed {
  run: RunRow;
  executionId: string;
  attempt: number;
  harness: HarnessType;
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

/** The `harness.type` a run asks for, lower-cased, `oz` when it names none. */
const HARNESS_OF_RUN = `coalesce(nullif(lower(r.config->'harness'->>'type'), ''), 'oz')`;

/** Runs of factories that a Kubernetes Factory executes with Jobs are the operator's to take. */
const NOT_KUBERNETES = `(r.factory_id IS NULL OR NOT EXISTS (
  SELECT 1 FROM kubernetes_factories k WHERE k.factory_id = r.factory_id AND k.deleted_at IS NULL AND k.executor = 'kubernetes'))`;

/**
 * Queued runs for the service's executors, best first: each team's runs oldest first, the teams interleaved
 * by how many runs each has active (claimed or in progress) plus the run's place in its team's queue, ties
 * going to the team served least recently, so a team with a burst of runs takes turns with the others
 * instead of going first until it is done.
 */
async function serviceCandidates(q: Queryable, spellings: string[], limit: number): Promise<string[]> {
  const res = await q.query<{ id: string }>(
    `WITH RECURSIVE queued_teams(team_id) AS (
       (SELECT team_id FROM runs WHERE state = 'QUEUED' AND worker_host IS NULL ORDER BY team_id LIMIT 1)
       UNION ALL
       SELECT (SELECT r.team_id FROM runs r WHERE r.state = 'QUEUED' AND r.worker_host IS NULL AND r.team_id > t.team_id
               ORDER BY r.team_id LIMIT 1)
       FROM queued_teams t WHERE t.team_id IS NOT NULL
     ),
     active AS (
       SELECT team_id, count(*)::int AS n FROM runs WHERE state IN ('CLAIMED', 'INPROGRESS') GROUP BY team_id
     ),
     candidates AS (
       SELECT c.id, c.team_id, c.created_at, row_number() OVER (PARTITION BY c.team_id ORDER BY c.created_at, c.id) AS place,
         (SELECT max(e.claimed_at) FROM executions e WHERE e.team_id = t.team_id) AS served_at
       FROM queued_teams t CROSS JOIN LATERAL (
         SELECT r.id, r.team_id, r.created_at FROM runs r
         WHERE r.team_id = t.team_id AND r.state = 'QUEUED' AND r.worker_host IS NULL
           AND ${HARNESS_OF_RUN} = ANY($1::text[]) AND ${NOT_KUBERNETES}
         ORDER BY r.created_at, r.id
         LIMIT $2
       ) c
       WHERE t.team_id IS NOT NULL
     )
     SELECT c.id FROM candidates c LEFT JOIN active a ON a.team_id = c.team_id
     ORDER BY coalesce(a.n, 0) + c.place, c.served_at NULLS FIRST, c.created_at, c.id
     LIMIT $2`,
    [spellings, limit],
  );
  return res.rows.map((r) => r.id);
}

async function workerCandidates(q: Queryable, teamId: string, workerId: string, spellings: string[], limit: number): Promise<string[]> {
  const res = await q.query<{ id: string }>(
    `SELECT r.id FROM runs r
     WHERE r.team_id = $1 AND r.worker_host = $2 AND r.state = 'QUEUED' AND ${HARNESS_OF_RUN} = ANY($3::text[])
     ORDER BY r.created_at, r.id
     LIMIT $4`,
    [teamId, workerId, spellings, limit],
  );
  return res.rows.map((r) => r.id);
}

async function claimCandidates(db: Db, ids: string[], options: ClaimOptions): Promise<Claimed[]> {
  if (ids.length === 0) return [];
  return db.transaction(async (tx) => {
    const locked = await tx.query<{ id: string; harness_type: string | null }>(
      `SELECT id, config->'harness'->>'type' AS harness_type FROM runs WHERE id = ANY($1::text[]) AND state = 'QUEUED' FOR UPDATE SKIP LOCKED`,
      [ids],
    );
    const harnessOf = new Map(locked.rows.map((r) => [r.id, harnessFor(r.harness_type, options.defaultHarness)]));
    const order = ids.filter((id) => harnessOf.get(id)).slice(0, options.limit);
    if (order.length === 0) return [];
    const attempts = await tx.query<{ run_id: string; n: number }>(
      'SELECT run_id, count(*)::int AS n FROM executions WHERE run_id = ANY($1::text[]) GROUP BY run_id',
      [order],
    );
    const attemptOf = new Map(attempts.rows.map((r) => [r.run_id, Number(r.n) + 1]));
    const claimed: Claimed[] = [];
    const rows: { id: string; runId: string; teamId: string; attempt: number; harness: string }[] = [];
    for (const runId of order) {
      const executionId = newId('exe');
      const harness = harnessOf.get(runId)!;
      const run = await applyRunEvent(tx, runId, 'claim', { executionId, statusMessage: null });
      if (!run) continue;
      const attempt = attemptOf.get(runId) ?? 1;
      rows.push({ id: executionId, runId, teamId: run.team_id, attempt, harness });
      claimed.push({ run, executionId, attempt, harness });
    }
    if (rows.length > 0) {
      await tx.query(
        `INSERT INTO executions (id, run_id, team_id, attempt, executor, worker_id, harness, lease_expires_at)
         SELECT x.id, x.run_id, x.team_id, x.attempt, $5, $6, x.harness, ay_now() + $7 * interval '1 millisecond'
         FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $8::text[]) AS x(id, run_id, team_id, attempt, harness)`,
        [
          rows.map((r) => r.id),
          rows.map((r) => r.runId),
          rows.map((r) => r.teamId),
          rows.map((r) => r.attempt),
          options.executor,
          options.workerId ?? null,
          options.leaseMs,
          rows.map((r) => r.harness),
        ],
      );
    }
    return claimed;
  });
}

/** Claims up to `limit` queued runs for this process's executors. */
export async function claimServiceRuns(db: Db, options: ClaimOptions): Promise<Claimed[]> {
  const spellings = harnessSpellings(options.harnesses, options.defaultHarness);
  if (options.limit <= 0 || spellings.length === 0) return [];
  // more candidates than slots: another process may lock some of them first
  const ids = await serviceCandidates(db, spellings, options.limit * 2);
  return claimCandidates(db, ids, options);
}

/** Claims up to `limit` queued runs of the team whose `worker_host` is the worker's ID. */
export async function claimWorkerRuns(db: Db, teamId: string, workerId: string, options: ClaimOptions): Promise<Claimed[]> {
  const spellings = harnessSpellings(options.harnesses, options.defaultHarness);
  if (options.limit <= 0 || spellings.length === 0) return [];
  const ids = await workerCandidates(db, teamId, workerId, spellings, options.limit * 2);
  return claimCandidates(db, ids, { ...options, workerId });
}
