/**
 * Direct hand-off: in a process whose executors have a free slot, a run created through RunService.create is
 * claimed in the statement that inserts it (ay_create_and_claim_service_runs, functions.sql) instead of being
 * inserted, announced, and then looked for by a claim of its own: one round trip from "create" to "the executor
 * has it", and the run is never seen QUEUED by anyone else. The claim is the executors' usual one (fair between
 * teams, QUEUED → CLAIMED through the state machine with its state event, an execution with its lease), so with
 * a queue it may take older runs of other teams first; the runs it leaves are announced as any new run is.
 * Creations of the same moment go together in one statement (group commit). The statement inserts the columns
 * insertRuns (src/engine/sql.ts) inserts, listed in functions.sql: the hand-off stays off when they differ.
 */
import type { Bus } from '../kernel/bus.ts';
import type { Db } from '../kernel/db.ts';
import { Batcher } from '../kernel/group-commit.ts';
import { emitLifecycle } from './announce.ts';
import type { Claimed, ClaimOptions } from './claim.ts';
import { createAndClaimServiceRuns } from './claim.ts';
import type { CreatedRun, InsertRun } from './sql.ts';
import { insertRunsParameter } from './sql.ts';

/**
 * Something in this process that claims new runs in the statement that creates them (the executors' direct
 * hand-off). `create` answers undefined when it does not take the run. RunService.create offers it its runs.
 */
export interface RunHandOff {
  create(row: InsertRun): Promise<CreatedRun> | undefined;
}

/** The executors a hand-off claims for. */
export interface HandOffTarget<H extends string = string> {
  /** Slots free for a claim right now (0 when stopping). */
  readonly freeSlots: number;
  /** Reserves up to `n` free slots; answers the options to claim them with (`limit`: the slots reserved). */
  reserve(n: number): ClaimOptions<H>;
  /** Takes the runs claimed with `reserved` reserved slots (none when the statement failed); frees the slots. */
  accept(claimed: Claimed<H>[], reserved: number): Promise<void>;
}

/** The columns ay_create_and_claim_service_runs (functions.sql) inserts. */
const HAND_OFF_COLUMNS = [
  'id',
  'team_id',
  'title',
  'prompt',
  'state',
  'source',
  'config',
  'config_name',
  'model_id',
  'environment_id',
  'skill_spec',
  'worker_host',
  'creator_id',
  'creator_type',
  'creator_name',
  'creator_email',
  'factory_id',
  'automation_id',
  'delivery_id',
  'schedule_id',
  'parent_run_id',
  'conversation_id',
  'session_id',
  'metadata',
  'executor_id',
  'executor_type',
  'executor_name',
];

/** A run with every field set, to see which columns insertRuns writes. */
const SAMPLE: InsertRun = {
  id: 'run_sample',
  teamId: 'team',
  title: 'title',
  prompt: 'prompt',
  state: 'QUEUED',
  source: 'API',
  config: { name: 'n', model_id: 'm', environment_id: 'e', skill_spec: 'r:s' },
  workerHost: null,
  creator: { id: 'usr_a', type: 'user', displayName: 'A', email: 'a@example.com' },
  executor: { id: 'sa_b', type: 'service_account', displayName: 'B' },
  factoryId: null,
  automationId: null,
  deliveryId: null,
  scheduleId: null,
  parentRunId: null,
  conversationId: null,
  sessionId: 'session',
  metadata: {},
};

/** Whether insertRuns writes exactly the columns the hand-off statement inserts. */
export function insertsHandOffColumns(): boolean {
  const [record] = JSON.parse(insertRunsParameter([SAMPLE])) as Record<string, unknown>[];
  const columns = Object.keys(record ?? {}).sort();
  const known = [...HAND_OFF_COLUMNS].sort();
  return columns.length === known.length && columns.every((c, i) => c === known[i]);
}

const created = (row: InsertRun): CreatedRun => ({ id: row.id, state: row.state, worker_host: row.workerHost });

export class HandOff<H extends string = string> implements RunHandOff {
  readonly #db: Db;
  readonly #bus: Bus;
  readonly #target: HandOffTarget<H>;
  readonly #announce: (runs: CreatedRun[]) => void;
  readonly #batcher = new Batcher<InsertRun, CreatedRun | Error>((rows) => this.#write(rows), { gather: 'microtasks' });
  readonly #pending = new Set<Promise<unknown>>();

  /** `announce`: tells the others about runs the statement inserted but did not claim. */
  constructor(db: Db, bus: Bus, target: HandOffTarget<H>, announce: (runs: CreatedRun[]) => void) {
    this.#db = db;
    this.#bus = bus;
    this.#target = target;
    this.#announce = announce;
  }

  /** Takes a queued run for the service's executors while they have a free slot; undefined otherwise. */
  create(row: InsertRun): Promise<CreatedRun> | undefined {
    if (row.state !== 'QUEUED' || row.workerHost !== null || this.#target.freeSlots <= 0) return undefined;
    const done = this.#batcher.add(row).then((r) => {
      if (r instanceof Error) throw r;
      return r;
    });
    this.#pending.add(done);
    void done.catch(() => {}).finally(() => this.#pending.delete(done));
    return done;
  }

  /** Resolves once the creations under way are written and their claims taken. */
  async drain(): Promise<void> {
    while (this.#pending.size) await Promise.allSettled([...this.#pending]);
  }

  async #write(rows: InsertRun[]): Promise<(CreatedRun | Error)[]> {
    try {
      const taken = await this.#createAndClaim(rows);
      // the answer says what committed: a run the statement claimed was never QUEUED to anyone else
      return rows.map((row) => (taken.has(row.id) ? { ...created(row), state: 'CLAIMED' } : created(row)));
    } catch (err) {
      if (rows.length === 1) return [err instanceof Error ? err : new Error(String(err))];
      // one bad row must not fail the others: write them one by one to find it
      const out: (CreatedRun | Error)[] = [];
      for (const row of rows) out.push(...(await this.#write([row])));
      return out;
    }
  }

  /** Answers the ids of the runs the statement claimed. */
  async #createAndClaim(rows: InsertRun[]): Promise<Set<string>> {
    const records = insertRunsParameter(rows);
    const options = this.#target.reserve(rows.length);
    let claimed: Claimed<H>[] = [];
    try {
      claimed = await createAndClaimServiceRuns(this.#db, undefined, records, options);
      // created, then claimed (the new runs it left are told created by `announce`)
      const fresh = new Set(rows.map((r) => r.id));
      emitLifecycle(this.#bus, [
        ...claimed
          .filter((c) => fresh.has(c.run.id))
          .map((c) => ({ run_id: c.run.id, event: 'created' as const, state: 'QUEUED' })),
        ...claimed.map((c) => ({ run_id: c.run.id, event: 'claimed' as const, state: c.run.state })),
      ]);
    } finally {
      void this.#target.accept(claimed, options.limit);
    }
    const taken = new Set(claimed.map((c) => c.run.id));
    const left = rows.filter((r) => !taken.has(r.id));
    if (left.length) this.#announce(left.map(created));
    return taken;
  }
}
