/**
 * The run engine's SQL: every statement that writes `runs` or `executions` (docs/architecture.md, "The life of
 * a run"). Creation, the state machine's compare-and-sets, the calls of the queue's functions (functions.sql:
 * claim, hand-off, start, end), leases, and the bookkeeping a run's row carries (its event sequence, artifacts,
 * waiting message, schedule). Other folders call these; none writes `runs` or `executions` itself.
 */
import type { WireMessages } from '../kernel/bus.ts';
import type { Queryable, QueryResult, SqlValue } from '../kernel/db.ts';
import { clip } from './events.ts';
import type { NewRunEvent } from './events.ts';
import type { ActsAs, AgentConfig, RunRow, RunSource } from './model.ts';
import type { RunEvent, RunState } from './state-machine.ts';
import { transitionFor } from './state-machine.ts';

// ---- creation ----

export interface InsertRun {
  id: string;
  teamId: string;
  title: string;
  prompt: string;
  state: RunState;
  source: RunSource;
  config: AgentConfig;
  workerHost: string | null;
  creator: { id: string; type: string; displayName: string; email: string | null } | null;
  /** Who the run executes as, when not the creator. */
  executor?: { id: string; type: string; displayName: string } | null;
  factoryId: string | null;
  automationId: string | null;
  deliveryId: string | null;
  scheduleId: string | null;
  parentRunId: string | null;
  conversationId: string | null;
  sessionId: string;
  metadata: Record<string, string>;
  /** A dispatched child's run-token check, made by the statement that inserts it (the hand-off only). */
  guard?: DispatchGuard;
}

/** What ay_dispatch_guard_holds (functions.sql) checks in the insert of a dispatched child. */
export interface DispatchGuard {
  tokenHash: string;
  maxChildren: number;
  maxActive: number;
  /** The factory's `updated_at` the child's configuration was resolved from. */
  factoryUpdatedAt: Date;
}

/** The insert of a guarded child was refused: its token's check did not hold (SQLSTATE AY001). */
export function isDispatchGuardRefusal(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === 'AY001';
}

/** The columns a new run is inserted with, and their types (the record type of the JSON batch). */
const INSERT_COLUMNS: readonly [string, string][] = [
  ['id', 'text'],
  ['team_id', 'text'],
  ['title', 'text'],
  ['prompt', 'text'],
  ['state', 'text'],
  ['source', 'text'],
  ['config', 'jsonb'],
  ['config_name', 'text'],
  ['model_id', 'text'],
  ['environment_id', 'text'],
  ['skill_spec', 'text'],
  ['worker_host', 'text'],
  ['creator_id', 'text'],
  ['creator_type', 'text'],
  ['creator_name', 'text'],
  ['creator_email', 'text'],
  ['factory_id', 'text'],
  ['automation_id', 'text'],
  ['delivery_id', 'text'],
  ['schedule_id', 'text'],
  ['parent_run_id', 'text'],
  ['conversation_id', 'text'],
  ['session_id', 'text'],
  ['metadata', 'jsonb'],
  ['executor_id', 'text'],
  ['executor_type', 'text'],
  ['executor_name', 'text'],
];

const COLUMN_LIST = INSERT_COLUMNS.map(([name]) => name).join(', ');

const RECORD_TYPE = INSERT_COLUMNS.map(([name, type]) => `${name} ${type}`).join(', ');

/** Inserts the records of insertRunsParameter ($1). */
const INSERT_RUNS = `INSERT INTO runs (${COLUMN_LIST}) SELECT ${COLUMN_LIST} FROM json_to_recordset($1::json) AS r(${RECORD_TYPE})`;

function insertRecord(r: InsertRun): Record<string, unknown> {
  // Stored only when someone other than the creator executes the run (migration 0004).
  const executor = r.executor && r.executor.id !== r.creator?.id ? r.executor : null;
  return {
    id: r.id,
    team_id: r.teamId,
    title: r.title,
    prompt: r.prompt,
    state: r.state,
    source: r.source,
    config: r.config,
    config_name: r.config.name ?? null,
    model_id: r.config.model_id ?? null,
    environment_id: r.config.environment_id ?? null,
    skill_spec: r.config.skill_spec ?? null,
    worker_host: r.workerHost,
    creator_id: r.creator?.id ?? null,
    creator_type: r.creator?.type ?? null,
    creator_name: r.creator?.displayName ?? null,
    creator_email: r.creator?.email ?? null,
    factory_id: r.factoryId,
    automation_id: r.automationId,
    delivery_id: r.deliveryId,
    schedule_id: r.scheduleId,
    parent_run_id: r.parentRunId,
    conversation_id: r.conversationId,
    session_id: r.sessionId,
    metadata: r.metadata,
    executor_id: executor?.id ?? null,
    executor_type: executor?.type ?? null,
    executor_name: executor?.displayName ?? null,
  };
}

/** Whom a CREATOR run acts as (RunService sets it in the transaction that inserts the run). */
export async function setRunActsAs(q: Queryable, runId: string, actsAs: ActsAs): Promise<RunRow> {
  const res = await q.query<RunRow>('UPDATE runs SET acts_as = $2 WHERE id = $1 RETURNING *', [
    runId,
    JSON.stringify(actsAs),
  ]);
  return res.rows[0]!;
}

export async function insertRun(q: Queryable, r: InsertRun): Promise<RunRow> {
  const res = await q.query<RunRow>(`${INSERT_RUNS} RETURNING *`, [insertRunsParameter([r])]);
  return res.rows[0]!;
}

/** What a new run's creator needs back: reading every column back costs more than the insert on PGlite. */
export type CreatedRun = Pick<RunRow, 'id' | 'state' | 'worker_host'>;

/**
 * The rows of a run insert as its one JSON parameter: on PGlite, binding 27 parameters per run cost more than the
 * insert itself. Unpacked by json_to_recordset, which reads the text as it goes (jsonb_to_recordset first builds a
 * jsonb value of the whole batch, slower per row: docs/decisions.md).
 */
export function insertRunsParameter(runs: readonly InsertRun[]): string {
  return JSON.stringify(
    runs.map((r) =>
      r.guard
        ? {
            ...insertRecord(r),
            guard: {
              token_hash: r.guard.tokenHash,
              max_children: r.guard.maxChildren,
              max_active: r.guard.maxActive,
              factory_updated_at: r.guard.factoryUpdatedAt.toISOString(),
            },
          }
        : insertRecord(r),
    ),
  );
}

/**
 * Several runs in one statement (all or none). A creator needs back only what it sent (id, state, worker
 * host), so nothing is read back: on PGlite, parsing RETURNING rows cost about a tenth of the insert.
 * `notify`: NOTIFYs sent by the same statement, so only if the runs commit, and without a round trip of their own.
 */
export async function insertRuns(
  q: Queryable,
  runs: readonly InsertRun[],
  notify?: WireMessages,
): Promise<CreatedRun[]> {
  let inserted: number | null;
  if (notify && notify.payloads.length > 0) {
    const res = await q.query<{ inserted: number }>(
      `WITH inserted AS (${INSERT_RUNS} RETURNING 1)
       SELECT (SELECT count(*) FROM inserted)::int AS inserted, (SELECT count(pg_notify($2, p)) FROM unnest($3::text[]) AS p) AS notified`,
      [insertRunsParameter(runs), notify.channel, notify.payloads],
    );
    inserted = res.rows[0]?.inserted ?? null;
  } else {
    inserted = (await q.query(INSERT_RUNS, [insertRunsParameter(runs)])).rowCount;
  }
  if (inserted !== runs.length) throw new Error(`inserted ${inserted} of ${runs.length} runs`);
  return runs.map((r) => ({ id: r.id, state: r.state, worker_host: r.workerHost }));
}

// ---- the state machine ----

/**
 * Moves a run by a state-machine event as a compare-and-set on its current state. Answers the updated row,
 * or undefined when the run was not in a state the event applies to.
 */
export async function applyRunEvent(
  q: Queryable,
  id: string,
  event: RunEvent,
  extra: {
    statusMessage?: RunRow['status_message'];
    teamId?: string;
    /**
     * `claim`: the execution that becomes the run's current one. Any other event: applies only while this is
     * still the run's current execution (an executor whose lease was taken over changes nothing).
     */
    executionId?: string;
  } = {},
): Promise<RunRow | undefined> {
  const t = transitionFor(event);
  const params: SqlValue[] = [id, t.to, [...t.from]];
  let sets = 'state = $2, updated_at = ay_now()';
  if (extra.executionId !== undefined && event === 'claim') {
    params.push(extra.executionId);
    sets += `, execution_id = $${params.length}`;
  }
  if (event === 'start') sets += ', started_at = coalesce(started_at, ay_now())';
  if (['succeed', 'fail', 'error', 'block', 'cancel'].includes(event)) sets += ', finished_at = ay_now()';
  if (event === 'continue') sets += ', finished_at = NULL';
  if (extra.statusMessage !== undefined) {
    params.push(extra.statusMessage === null ? null : JSON.stringify(extra.statusMessage));
    sets += `, status_message = $${params.length}`;
  }
  let where = 'id = $1 AND state = ANY($3)';
  if (extra.teamId) {
    params.push(extra.teamId);
    where += ` AND team_id = $${params.length}`;
  }
  if (extra.executionId !== undefined && event !== 'claim') {
    params.push(extra.executionId);
    where += ` AND execution_id = $${params.length}`;
  }
  const res = await q.query<RunRow>(`UPDATE runs SET ${sets} WHERE ${where} RETURNING *`, params);
  return res.rows[0];
}

/**
 * Cancels a run and every run below it (`parent_run_id`, any depth): each one still active moves by the
 * `cancel` transition, with `message` on the root and `childMessage` on the others; a root superseded by a newer
 * run of its concurrency key keeps that run's id in `superseded_by`. Answers the runs moved.
 */
export async function cancelRunTree(
  q: Queryable,
  teamId: string,
  rootId: string,
  message: string,
  childMessage: string,
  supersededBy: string | null = null,
): Promise<RunRow[]> {
  const t = transitionFor('cancel');
  const res = await q.query<RunRow>(
    `WITH RECURSIVE tree(id) AS (
       SELECT id FROM runs WHERE id = $1 AND team_id = $2
       UNION
       SELECT r.id FROM runs r JOIN tree ON r.parent_run_id = tree.id WHERE r.team_id = $2
     )
     UPDATE runs r SET state = $3, updated_at = ay_now(), finished_at = ay_now(),
       status_message = jsonb_build_object('message', CASE WHEN r.id = $1 THEN $5 ELSE $6 END),
       superseded_by = CASE WHEN r.id = $1 AND $7::text IS NOT NULL THEN $7::text ELSE r.superseded_by END
     FROM tree WHERE r.id = tree.id AND r.state = ANY($4)
     RETURNING r.*`,
    [rootId, teamId, t.to, [...t.from], message, childMessage, supersededBy],
  );
  return res.rows;
}

// ---- concurrency keys (docs/governance.md, "Concurrency keys") ----

/** The factory's runs of a concurrency key that have not ended (QUEUED, PENDING, CLAIMED, INPROGRESS), newest first. */
export async function openKeyRuns(
  q: Queryable,
  factoryId: string,
  key: string,
): Promise<{ id: string; team_id: string; state: RunState }[]> {
  const res = await q.query<{ id: string; team_id: string; state: RunState }>(
    `SELECT id, team_id, state FROM runs
      WHERE factory_id = $1 AND concurrency_key = $2 AND concurrency_key IS NOT NULL
        AND state IN ('QUEUED', 'PENDING', 'CLAIMED', 'INPROGRESS')
      ORDER BY created_at DESC, id DESC`,
    [factoryId, key],
  );
  return res.rows;
}

/**
 * A new run's concurrency key and limit, in the transaction that inserts it (before any claim can see it), and
 * the status message it waits with when its key is at the limit already.
 */
export async function setRunConcurrency(
  q: Queryable,
  runId: string,
  c: { key: string; limit: number; heldMessage: string | null },
): Promise<void> {
  await q.query(
    `UPDATE runs SET concurrency_key = $2, concurrency_limit = $3,
       status_message = CASE WHEN $4::text IS NULL THEN status_message ELSE jsonb_build_object('message', $4::text) END
     WHERE id = $1`,
    [runId, c.key, c.limit, c.heldMessage],
  );
}

/**
 * Cancels a run superseded by a newer run of its concurrency key (`onNew: cancelRunning`), with the runs it
 * started (any depth), as cancelRunTree does; the run keeps the newer run's id in `superseded_by`.
 */
export function supersedeRunTree(
  q: Queryable,
  teamId: string,
  rootId: string,
  newerRunId: string,
  message: string,
  childMessage: string,
): Promise<RunRow[]> {
  return cancelRunTree(q, teamId, rootId, message, childMessage, newerRunId);
}

/** Cancels the runs among `ids` that may be cancelled; answers those it moved. */
export async function cancelRuns(
  q: Queryable,
  ids: readonly string[],
  message: string,
): Promise<{ id: string; state: RunState }[]> {
  if (ids.length === 0) return [];
  const t = transitionFor('cancel');
  const res = await q.query<{ id: string; state: RunState }>(
    `UPDATE runs SET state = $2, updated_at = ay_now(), finished_at = ay_now(), status_message = $4::jsonb
      WHERE id = ANY($1::text[]) AND state = ANY($3::text[]) RETURNING id, state`,
    [ids as string[], t.to, [...t.from], JSON.stringify({ message })],
  );
  return res.rows;
}

// ---- the queue (functions.sql) ----

/** What a claim reads for the claimed run's assignment (execution/assignment-builder.ts, AssignmentInputs). */
export interface ClaimInputs {
  run_id: string;
  /** Earlier executions of the run, newest first. */
  previous: { id: string; agent_session_id: string | null; started: boolean }[];
  followups: { id: string; message: string }[];
  attachments: { file_name: string; mime_type: string; data: string }[];
  /**
   * Read by a claim for a run of a factory (null: none, or deleted): what its definition sets for the execution
   * (ay_claim_locked, functions.sql). Absent: not read (execution/runner-settings.ts reads it).
   */
  factory?: ClaimedFactory | null;
}

/** A claimed factory run's runner settings, its `secrets` and its factory's `integrations`, as stored (JSON). */
export interface ClaimedFactory {
  image: string | null;
  limits: unknown;
  network: unknown;
  secrets: unknown;
  integrations: unknown;
}

/** A row answered by a claim: the claimed run as JSON, its new execution, and what its assignment needs. */
export interface ClaimRow {
  run: Record<string, unknown>;
  execution_id: string;
  attempt: number;
  /** A harness type of execution/settings.ts. */
  harness: string;
  previous: ClaimInputs['previous'];
  followups: ClaimInputs['followups'];
  attachments: ClaimInputs['attachments'];
  factory: ClaimedFactory | null;
}

/** The parameters every claim passes (harness spellings, new execution ids, the lease, the `claim` transition). */
export interface ClaimParams {
  harnesses: string[];
  limit: number;
  executionIds: string[];
  harnessSpellings: string[];
  harnessTypes: string[];
  executor: string;
  leaseMs: number;
  to: string;
  from: string[];
}

/**
 * What a worker connection's registration may receive (docs/security.md, "Self-hosted workers"): `trusted`, a
 * team admin key's connection, every run of its team; otherwise runs acting as a member only when `registrant`
 * (the subject who made its worker token) is that member.
 */
export interface WorkerRegistration {
  trusted: boolean;
  registrant: string | null;
}

/** The claim parameters in the order every claim function takes them. */
const claimArgs = (p: ClaimParams): SqlValue[] => [
  p.harnesses,
  p.limit,
  p.executionIds,
  p.harnessSpellings,
  p.harnessTypes,
  p.executor,
  p.leaseMs,
  p.to,
  p.from,
];

/**
 * Who a claim is for, as ay_claim_runs takes it: `kind` picks the lock function (`service`, `worker`,
 * `kubernetes`); the other members narrow the queue for that kind (null or empty where they do not apply).
 */
export interface ClaimTargetParams {
  kind: 'service' | 'worker' | 'kubernetes';
  team: string | null;
  worker: string | null;
  trusted: boolean;
  registrant: string | null;
  /** `kubernetes`: `worker_host` values that mean "the service". */
  hosts: string[];
  /** `kubernetes`: runs of this namespace's Factories only (null: every namespace). */
  namespace: string | null;
}

/** The one claim of every executor kind (ay_claim_runs, functions.sql). */
export function ayClaimRuns(q: Queryable, t: ClaimTargetParams, p: ClaimParams): Promise<QueryResult<ClaimRow>> {
  return q.query<ClaimRow>(
    'SELECT * FROM ay_claim_runs($1, $2, $3, $4::boolean, $5, $6::text[], $7, $8::text[], $9::int, $10::text[], $11::text[], $12::text[], $13, $14::int, $15, $16::text[])',
    [t.kind, t.team, t.worker, t.trusted, t.registrant, t.hosts, t.namespace, ...claimArgs(p)],
  );
}

/** `records`: the JSON records of insertRunsParameter. */
export function ayCreateAndClaimServiceRuns(
  q: Queryable,
  records: string,
  p: ClaimParams,
): Promise<QueryResult<ClaimRow>> {
  return q.query<ClaimRow>(
    'SELECT * FROM ay_create_and_claim_service_runs($1::jsonb, $2::text[], $3::int, $4::text[], $5::text[], $6::text[], $7, $8::int, $9, $10::text[])',
    [records, ...claimArgs(p)],
  );
}

/** The arrays ay_start_executions takes, one entry per execution (the follow-ups: one per follow-up). */
export interface StartParams {
  runIds: string[];
  executionIds: string[];
  workspaces: string[];
  leases: number[];
  messages: string[];
  followupIds: string[];
  followupExecutions: string[];
  to: string;
  from: string[];
  /** Per run: `LOCAL` when this server's executors run it (its `execution_location`), null to leave it. */
  locations: (string | null)[];
}

export function ayStartExecutions(q: Queryable, p: StartParams): Promise<QueryResult<{ run_id: string }>> {
  return q.query<{ run_id: string }>(
    'SELECT run_id FROM ay_start_executions($1::text[], $2::text[], $3::text[], $4::int[], $5::jsonb[], $6::text[], $7::text[], $8, $9::text[], $10::text[])',
    [
      p.runIds,
      p.executionIds,
      p.workspaces,
      p.leases,
      p.messages,
      p.followupIds,
      p.followupExecutions,
      p.to,
      p.from,
      p.locations,
    ],
  );
}

/** The arrays ay_end_executions takes, one entry per execution, and the transitions its ends use (JSON). */
export interface EndParams {
  executionIds: string[];
  runIds: string[];
  outcomes: string[];
  exitCodes: (number | null)[];
  sessions: (string | null)[];
  workspaces: (string | null)[];
  events: (string | null)[];
  messages: string[];
  usages: (string | null)[];
  transitions: string;
}

export function ayEndExecutions(
  q: Queryable,
  p: EndParams,
): Promise<QueryResult<{ run: Record<string, unknown>; requeued: boolean }>> {
  return q.query<{ run: Record<string, unknown>; requeued: boolean }>(
    'SELECT * FROM ay_end_executions($1::text[], $2::text[], $3::text[], $4::int[], $5::text[], $6::text[], $7::text[], $8::jsonb[], $9::jsonb[], $10::jsonb)',
    [
      p.executionIds,
      p.runIds,
      p.outcomes,
      p.exitCodes,
      p.sessions,
      p.workspaces,
      p.events,
      p.messages,
      p.usages,
      p.transitions,
    ],
  );
}

// ---- leases ----

export interface LiveRow {
  id: string;
  ended: boolean;
  state: string | null;
  current: string | null;
}

/** Extends the leases of the live executions among `ids`; answers each with its run's state. */
export function heartbeatExecutions(
  q: Queryable,
  ids: readonly string[],
  leaseMs: number,
): Promise<QueryResult<LiveRow>> {
  return q.query<LiveRow>(
    `WITH beat AS (
         UPDATE executions SET heartbeat_at = ay_now(), lease_expires_at = ay_now() + $2 * interval '1 millisecond'
         WHERE id = ANY($1::text[]) AND ended_at IS NULL RETURNING id, run_id
       )
       SELECT e.id, (b.id IS NULL) AS ended, r.state, r.execution_id AS current
       FROM executions e LEFT JOIN beat b ON b.id = e.id LEFT JOIN runs r ON r.id = e.run_id
       WHERE e.id = ANY($1::text[])`,
    [ids, leaseMs],
  );
}

export function checkExecutions(q: Queryable, ids: readonly string[]): Promise<QueryResult<LiveRow>> {
  return q.query<LiveRow>(
    `SELECT e.id, (e.ended_at IS NOT NULL) AS ended, r.state, r.execution_id AS current
       FROM executions e LEFT JOIN runs r ON r.id = e.run_id WHERE e.id = ANY($1::text[])`,
    [ids],
  );
}

/** Ends a live execution as `released`; answers its id when it was live. */
export function releaseExecution(q: Queryable, executionId: string): Promise<QueryResult<{ id: string }>> {
  return q.query<{ id: string }>(
    `UPDATE executions SET ended_at = ay_now(), outcome = 'released' WHERE id = $1 AND ended_at IS NULL RETURNING id`,
    [executionId],
  );
}

export interface ExpiredExecution {
  id: string;
  run_id: string;
  executor: string;
  started_at: Date | null;
  lease_expires_at: Date;
}

/** Locks up to 100 live executions whose lease expired, oldest expiry first. */
export function lockExpiredExecutions(q: Queryable): Promise<QueryResult<ExpiredExecution>> {
  return q.query<ExpiredExecution>(
    `SELECT id, run_id, executor, started_at, lease_expires_at FROM executions
         WHERE ended_at IS NULL AND lease_expires_at < ay_now()
         ORDER BY lease_expires_at LIMIT 100 FOR UPDATE SKIP LOCKED`,
  );
}

export async function endExecution(q: Queryable, id: string, outcome: string): Promise<void> {
  await q.query(`UPDATE executions SET ended_at = ay_now(), outcome = $2 WHERE id = $1`, [id, outcome]);
}

/**
 * Executions a worker still runs after a reconnect: the new connection (`executor`) holds their leases from
 * now on. Answers those adopted (live, of the team and the worker, of runs this registration may receive: the
 * rule of ay_lock_worker_runs, so that a worker cannot take over the reports of a run it could not claim).
 */
export function adoptExecutions(
  q: Queryable,
  p: {
    executionIds: readonly string[];
    teamId: string;
    workerId: string;
    executor: string;
    leaseMs: number;
    trusted: boolean;
    registrant: string;
  },
): Promise<QueryResult<{ id: string; run_id: string; harness: string; started: boolean }>> {
  return q.query<{ id: string; run_id: string; harness: string; started: boolean }>(
    `UPDATE executions e SET executor = $4, lease_expires_at = ay_now() + $5 * interval '1 millisecond', heartbeat_at = ay_now()
       FROM runs r
      WHERE e.id = ANY($1::text[]) AND e.team_id = $2 AND e.worker_id = $3 AND e.ended_at IS NULL AND r.id = e.run_id
        AND ($6::boolean OR r.acts_as IS NULL OR EXISTS (
          SELECT 1 FROM integration_identities i
          WHERE i.team_id = r.team_id AND i.subject_id = $7 AND i.provider = r.acts_as->>'provider'
            AND lower(i.external_id) = lower(r.acts_as->>'account')))
      RETURNING e.id, e.run_id, e.harness, (e.started_at IS NOT NULL) AS started`,
    [p.executionIds, p.teamId, p.workerId, p.executor, p.leaseMs, p.trusted, p.registrant],
  );
}

// ---- what a run row carries ----

/**
 * Appends events to a run (in the caller's transaction when given one). Answers the sequence of the last
 * event written, or undefined when the run does not exist.
 */
export async function appendRunEvents(
  q: Queryable,
  runId: string,
  executionId: string | null,
  events: readonly NewRunEvent[],
): Promise<number | undefined> {
  if (events.length === 0) return undefined;
  const bumped = await q.query<{ event_seq: number }>(
    'UPDATE runs SET event_seq = event_seq + $2 WHERE id = $1 RETURNING event_seq',
    [runId, events.length],
  );
  const last = bumped.rows[0]?.event_seq;
  if (last === undefined) return undefined;
  const first = Number(last) - events.length + 1;
  await q.query(
    `INSERT INTO run_events (run_id, sequence, execution_id, type, data, occurred_at)
     SELECT $1, $2::bigint + e.ord - 1, $3, e.type, e.data, coalesce(e.occurred_at, ay_now())
     FROM unnest($4::text[], $5::jsonb[], $6::timestamptz[]) WITH ORDINALITY AS e(type, data, occurred_at, ord)`,
    [
      runId,
      first,
      executionId,
      events.map((e) => e.type),
      events.map((e) => JSON.stringify(clip(e.data))),
      events.map((e) => e.occurredAt ?? null),
    ],
  );
  return Number(last);
}

/**
 * Appends events to several runs in one statement (executors write the events of many executions at once).
 * Answers the sequence of each run's last event written.
 */
export async function appendEventsOfRuns(
  q: Queryable,
  batches: readonly { runId: string; executionId: string | null; events: readonly NewRunEvent[] }[],
): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  const rows: { runId: string; ord: number; executionId: string | null; e: NewRunEvent }[] = [];
  for (const b of batches) {
    for (const e of b.events) {
      const ord = (counts.get(b.runId) ?? 0) + 1;
      counts.set(b.runId, ord);
      rows.push({ runId: b.runId, ord, executionId: b.executionId, e });
    }
  }
  if (rows.length === 0) return new Map();
  // runs locked in id order, so two batches never wait on each other in a circle
  const runIds = [...counts.keys()].sort();
  const res = await q.query<{ run_id: string; last: number }>(
    `WITH wanted AS (
       SELECT w.run_id, w.n FROM unnest($1::text[], $2::int[]) AS w(run_id, n)
     ), locked AS (
       SELECT r.id FROM runs r JOIN wanted w ON w.run_id = r.id ORDER BY r.id FOR UPDATE OF r
     ), bumped AS (
       UPDATE runs r SET event_seq = r.event_seq + w.n FROM wanted w, locked l
       WHERE r.id = w.run_id AND l.id = r.id RETURNING r.id, r.event_seq, w.n
     ), written AS (
       INSERT INTO run_events (run_id, sequence, execution_id, type, data, occurred_at)
       SELECT e.run_id, b.event_seq - b.n + e.ord, e.execution_id, e.type, e.data, coalesce(e.occurred_at, ay_now())
       FROM unnest($3::text[], $4::int[], $5::text[], $6::text[], $7::jsonb[], $8::timestamptz[])
         AS e(run_id, ord, execution_id, type, data, occurred_at)
       JOIN bumped b ON b.id = e.run_id
       RETURNING 1
     )
     SELECT b.id AS run_id, b.event_seq AS last FROM bumped b`,
    [
      runIds,
      runIds.map((id) => counts.get(id)!),
      rows.map((r) => r.runId),
      rows.map((r) => r.ord),
      rows.map((r) => r.executionId),
      rows.map((r) => r.e.type),
      rows.map((r) => JSON.stringify(clip(r.e.data))),
      rows.map((r) => r.e.occurredAt ?? null),
    ],
  );
  return new Map(res.rows.map((r) => [r.run_id, Number(r.last)]));
}

/** Finished runs holding a follow-up nobody consumed for a second (at most 100): the reaper continues them. */
export function runsWithUnconsumedFollowups(q: Queryable): Promise<QueryResult<{ run_id: string }>> {
  return q.query<{ run_id: string }>(
    `SELECT DISTINCT f.run_id FROM run_followups f JOIN runs r ON r.id = f.run_id
       WHERE f.consumed_by_execution IS NULL AND r.state IN ('SUCCEEDED', 'FAILED', 'ERROR') AND r.execution_id IS NOT NULL
         AND f.created_at < ay_now() - interval '1 second'
       LIMIT 100`,
  );
}

/** Marks a run updated now (a change beside its row: a follow-up). */
export async function touchRun(q: Queryable, runId: string): Promise<void> {
  await q.query('UPDATE runs SET updated_at = ay_now() WHERE id = $1', [runId]);
}

/** Appends artifacts (a JSON array) to a run's. */
export async function appendRunArtifacts(q: Queryable, runId: string, artifacts: string): Promise<void> {
  await q.query(`UPDATE runs SET artifacts = artifacts || $2::jsonb, updated_at = ay_now() WHERE id = $1`, [
    runId,
    artifacts,
  ]);
}

/** Sets the waiting messages of runs still queued; answers how many changed. */
export async function setWaitingMessages(
  q: Queryable,
  changes: readonly { id: string; message: string }[],
): Promise<number> {
  const res = await q.query(
    `UPDATE runs r SET status_message = jsonb_build_object('message', c.message)
     FROM unnest($1::text[], $2::text[]) AS c(id, message)
     WHERE r.id = c.id AND r.state = 'QUEUED'`,
    [changes.map((c) => c.id), changes.map((c) => c.message)],
  );
  return res.rowCount;
}

/** What schedule fired a run, as it was at the fire (`schedule_info`). */
export async function setRunScheduleInfo(q: Queryable, runId: string, info: string): Promise<void> {
  await q.query('UPDATE runs SET schedule_info = $2 WHERE id = $1', [runId, info]);
}
