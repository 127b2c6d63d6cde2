import { automationRunBase } from '../automations/run-input.ts';
import { isAppError } from '../kernel/errors.ts';
import type { CreateRunInput, RunService } from '../runs/service.ts';
import type { Db, Queryable } from '../kernel/db.ts';
import { parseCron } from './cron.ts';
import type { ScheduleRow } from './model.ts';
import { creatorOfInfo, scheduleInfoOf } from './model.ts';
import * as sql from './sql.ts';
import type { LiveAutomation } from './sql.ts';
import * as engine from '../engine/engine.ts';
import type { RunChange } from '../engine/announce.ts';
import { applyConcurrency, concurrencySkip, scheduleKey } from '../automations/concurrency.ts';
import type { FiringConcurrency } from '../automations/concurrency.ts';
import { concurrencyOf } from '../definitions/concurrency-key.ts';

export interface FireOptions {
  now: Date;
  /** This process, recorded on each fire (diagnostics). */
  firedBy: string;
  /** Due schedules claimed per transaction. */
  batchSize?: number;
  /** Where the runs are created, in the fire's transaction (the caller announces them after). */
  runs: RunService;
}

export interface CreatedRun {
  run_id: string;
  worker_host: string | null;
  schedule_id: string;
}

export interface FireOutcome {
  /** Slots fired (a fire whose runs all failed still counts). */
  fired: number;
  runs: CreatedRun[];
  /** Older runs cancelled by the new ones (concurrency `onNew: cancelRunning`), to announce after the commit. */
  superseded: RunChange[];
}

/** A run a fire asks for, with its automation's concurrency key. */
interface FireInput {
  input: CreateRunInput;
  concurrency?: FiringConcurrency | undefined;
}

function messageOf(err: unknown): string {
  if (isAppError(err)) return err.detail ?? err.message;
  return err instanceof Error ? err.message : String(err);
}

let savepointCounter = 0;

/** Runs `fn` under a savepoint: a failure undoes only its own writes, and the transaction goes on. */
async function underSavepoint<T>(
  tx: Queryable,
  fn: () => Promise<T>,
): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  const name = `schedule_fire_${++savepointCounter}`;
  await tx.query(`SAVEPOINT ${name}`);
  try {
    const value = await fn();
    await tx.query(`RELEASE SAVEPOINT ${name}`);
    return { ok: true, value };
  } catch (error) {
    await tx.query(`ROLLBACK TO SAVEPOINT ${name}`);
    return { ok: false, error };
  }
}

/** A run of an automation for a schedule fire: the automation's prompt and settings, its agent's base prompt. */
function automationRunInput(schedule: ScheduleRow, automation: LiveAutomation): FireInput {
  const policy = concurrencyOf(automation.concurrency);
  return {
    input: {
      ...automationRunBase(automation, automation.agent_prompt),
      prompt: automation.prompt,
      title: `${automation.name}: schedule ${schedule.name}`,
      source: 'SCHEDULED_AGENT',
      scheduleId: schedule.id,
    },
    ...(policy ? { concurrency: scheduleKey(policy, schedule.name) } : {}),
  };
}

/** The runs one fire asks for: the schedule's own, then one per automation selecting it by id. */
async function runInputsOf(tx: Queryable, schedule: ScheduleRow): Promise<{ inputs: FireInput[]; problems: string[] }> {
  const inputs: FireInput[] = [];
  const problems: string[] = [];
  let owner: string | null = null;
  if (schedule.origin === 'api') {
    inputs.push({
      input: {
        teamId: schedule.team_id,
        prompt: schedule.prompt,
        config: schedule.agent_config,
        source: 'SCHEDULED_AGENT',
        // whoever last set the prompt asked for these runs, not necessarily the schedule's creator
        creator: creatorOfInfo(schedule.prompt_set_by ?? schedule.created_by),
        scheduleId: schedule.id,
        ...(Object.keys(schedule.metadata).length ? { metadata: schedule.metadata } : {}),
      },
    });
  } else {
    const automation = schedule.automation_id ? await sql.getLiveAutomation(tx, schedule.automation_id) : undefined;
    if (!automation) problems.push(`automation "${schedule.automation_name}" no longer exists`);
    else if (!automation.enabled) problems.push(`automation "${automation.name}" is disabled`);
    else {
      owner = automation.id;
      inputs.push(automationRunInput(schedule, automation));
    }
  }
  // One fire starts an automation once, even when it also selects this schedule by id.
  for (const automation of await sql.automationsSelectingSchedule(tx, schedule.team_id, schedule.id)) {
    if (automation.id !== owner) inputs.push(automationRunInput(schedule, automation));
  }
  return { inputs, problems };
}

/**
 * Fires one claimed schedule for its due slot: records the slot (a slot fires at most once, whichever
 * process gets there), creates its runs, and moves `next_run_at` to the first slot after `now`, so slots
 * missed while no scheduler ran collapse into this one fire.
 */
async function fireOne(
  tx: Queryable,
  schedule: ScheduleRow,
  options: FireOptions,
  superseded: RunChange[],
): Promise<CreatedRun[]> {
  const slot = schedule.next_run_at!;
  let nextRunAt: Date | null;
  try {
    nextRunAt = parseCron(schedule.cron_schedule).nextAfterFire(slot, options.now);
  } catch (err) {
    // Only possible if the grammar got stricter after the schedule was stored: stop it and say why.
    await sql.markFired(tx, schedule.id, { nextRunAt: null, ranAt: null, error: `cron_schedule: ${messageOf(err)}` });
    return [];
  }
  const fresh = await sql.recordFire(tx, {
    scheduleId: schedule.id,
    scheduledFor: slot,
    firedAt: options.now,
    runIds: [],
    error: null,
    firedBy: options.firedBy,
  });
  if (!fresh) {
    await sql.markFired(tx, schedule.id, { nextRunAt, ranAt: null, error: schedule.last_spawn_error });
    return [];
  }

  const { inputs, problems } = await runInputsOf(tx, schedule);
  const created: CreatedRun[] = [];
  const info = JSON.stringify(scheduleInfoOf(schedule));
  for (const { input, concurrency } of inputs) {
    const factoryId = input.factoryId;
    const outcome = await underSavepoint(
      tx,
      async (): Promise<{ skipped: string } | { run: engine.CreatedRun; cancelled: RunChange[] }> => {
        if (concurrency && factoryId) {
          const skipped = await concurrencySkip(tx, factoryId, concurrency);
          if (skipped) return { skipped };
        }
        const { run } = await options.runs.create(input, { within: tx });
        await engine.setRunScheduleInfo(tx, run.id, info);
        const cancelled = concurrency && factoryId ? await applyConcurrency(tx, run, factoryId, concurrency) : [];
        return { run, cancelled };
      },
    );
    if (!outcome.ok)
      problems.push(
        input.automationId ? `automation ${input.automationId}: ${messageOf(outcome.error)}` : messageOf(outcome.error),
      );
    else if ('skipped' in outcome.value) problems.push(`automation ${input.automationId}: ${outcome.value.skipped}`);
    else {
      const { run, cancelled } = outcome.value;
      created.push({ run_id: run.id, worker_host: run.worker_host, schedule_id: schedule.id });
      superseded.push(...cancelled);
    }
  }
  const error = problems.length ? problems.join('; ') : null;
  await sql.recordFireRuns(
    tx,
    schedule.id,
    slot,
    created.map((r) => r.run_id),
    error,
  );
  await sql.markFired(tx, schedule.id, { nextRunAt, ranAt: created.length ? options.now : null, error });
  return created;
}

/**
 * Fires every schedule due at `now`. Each batch is claimed with `FOR UPDATE SKIP LOCKED` and advanced in the
 * same transaction, so several schedulers on one database never fire the same slot twice.
 */
export async function fireDueSchedules(db: Db, options: FireOptions): Promise<FireOutcome> {
  const batchSize = options.batchSize ?? 50;
  const outcome: FireOutcome = { fired: 0, runs: [], superseded: [] };
  for (;;) {
    const batch = await db.transaction(async (tx) => {
      const due = await sql.claimDue(tx, options.now, batchSize);
      const runs: CreatedRun[] = [];
      const superseded: RunChange[] = [];
      for (const schedule of due) runs.push(...(await fireOne(tx, schedule, options, superseded)));
      return { claimed: due.length, runs, superseded };
    });
    outcome.fired += batch.claimed;
    outcome.runs.push(...batch.runs);
    outcome.superseded.push(...batch.superseded);
    if (batch.claimed < batchSize) return outcome;
  }
}
