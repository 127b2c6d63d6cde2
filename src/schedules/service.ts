import { SCHEDULES_CHANGED_TOPIC } from '../kernel/topics.ts';
import { AppError, isAppError } from '../kernel/errors.ts';
import type { AgentConfig } from '../runs/model.ts';
import { checkMetadata, resolveConfig } from '../runs/service.ts';
import type { Bus } from '../kernel/bus.ts';
import type { Db } from '../kernel/db.ts';
import { newId } from '../kernel/ids.ts';
import type { Clock } from '../kernel/clock.ts';
import { parseCron } from './cron.ts';
import type { CreatorInfo, ScheduleRow } from './model.ts';
import * as sql from './sql.ts';
import type { ScheduleFields } from './sql.ts';

export interface ScheduleInput {
  name?: string | undefined;
  cron_schedule?: string | undefined;
  prompt?: string | undefined;
  enabled?: boolean | undefined;
  agent_config?: AgentConfig | undefined;
  metadata?: Record<string, string> | undefined;
}

const MAX_NAME = 200;
/** Validates a create or full-replacement body into the stored fields (without `next_run_at`). */
export function checkScheduleInput(input: ScheduleInput, enabledDefault: boolean): Omit<ScheduleFields, 'nextRunAt'> {
  const name = input.name?.trim() ?? '';
  if (!name) throw new AppError('invalid_request', 'name is required');
  if (name.length > MAX_NAME) throw new AppError('invalid_request', `name is longer than ${MAX_NAME} characters`);
  const cron = input.cron_schedule?.trim() ?? '';
  if (!cron) throw new AppError('invalid_request', 'cron_schedule is required (for example "0 9 * * *", UTC)');
  try {
    parseCron(cron);
  } catch (err) {
    throw new AppError(
      'invalid_request',
      `cron_schedule "${cron}" is not valid: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  const agentConfig = input.agent_config ?? {};
  const prompt = input.prompt ?? '';
  if (!prompt.trim() && !agentConfig.skill_spec)
    throw new AppError('invalid_request', 'prompt is required unless agent_config.skill_spec is set');
  try {
    resolveConfig({ prompt, config: agentConfig });
  } catch (err) {
    if (!isAppError(err) || !err.detail) throw err;
    throw new AppError(
      'invalid_request',
      err.detail.replace(/^config\./, 'agent_config.').replace(/^skill must/, 'agent_config.skill_spec must'),
    );
  }
  const metadata = input.metadata ?? {};
  checkMetadata(metadata);
  return { name, cronSchedule: cron, enabled: input.enabled ?? enabledDefault, prompt, agentConfig, metadata };
}

/** The first slot after `now`; a stored expression the grammar no longer accepts asks for a new one. */
function nextFromNow(cron: string, now: Date): Date {
  try {
    return parseCron(cron).nextAfter(now);
  } catch (err) {
    throw new AppError(
      'invalid_request',
      `cron_schedule "${cron}" is no longer valid (${err instanceof Error ? err.message : String(err)}); replace it with PUT`,
    );
  }
}

/** The caller of a schedule change: who they are, and whether their key is a team admin's. */
export interface ScheduleCaller {
  info: CreatorInfo;
  admin: boolean;
}

/** A schedule is changed by its creator or a team admin (docs/security.md, "Schedules"). */
function refuseIfNotOwner(row: ScheduleRow, caller: ScheduleCaller): void {
  if (caller.admin || (row.created_by !== null && row.created_by.uid === caller.info.uid)) return;
  throw new AppError(
    'schedule_not_owned',
    `schedule ${row.id} was created by ${row.created_by?.display_name ?? 'someone else'}: only its creator or a team admin may change or delete it`,
  );
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function refuseIfManaged(row: ScheduleRow): void {
  if (row.origin === 'automation') {
    throw new AppError(
      'factory_read_only',
      `schedule ${row.id} is declared by automation "${row.automation_name}" of factory ${row.factory_id}; change the automation file instead`,
    );
  }
}

/** The /agent/schedules operations. Every change wakes the schedulers of every process. */
export class ScheduleService {
  readonly #db: Db;
  readonly #bus: Bus;
  readonly #clock: Clock;

  constructor(db: Db, bus: Bus, clock: Clock) {
    this.#db = db;
    this.#bus = bus;
    this.#clock = clock;
  }

  async create(teamId: string, creator: CreatorInfo, input: ScheduleInput): Promise<ScheduleRow> {
    const fields = checkScheduleInput(input, true);
    const nextRunAt = fields.enabled ? parseCron(fields.cronSchedule).nextAfter(this.#clock.now()) : null;
    const row = await sql.insertApiSchedule(this.#db, {
      ...fields,
      nextRunAt,
      id: newId('sch'),
      teamId,
      createdBy: creator,
    });
    await this.#changed(row);
    return row;
  }

  async get(teamId: string, id: string): Promise<ScheduleRow> {
    const row = await sql.getSchedule(this.#db, teamId, id);
    if (!row) throw new AppError('resource_not_found', `schedule ${id} does not exist`);
    return row;
  }

  list(teamId: string): Promise<ScheduleRow[]> {
    return sql.listSchedules(this.#db, teamId);
  }

  /** Full replacement. The next fire is recomputed from now when the cron changes or the schedule is re-enabled. */
  async replace(teamId: string, id: string, caller: ScheduleCaller, input: ScheduleInput): Promise<ScheduleRow> {
    const fields = checkScheduleInput(input, true);
    const updater = caller.info;
    const row = await this.#db.transaction(async (tx) => {
      const current = await sql.getSchedule(tx, teamId, id, true);
      if (!current) throw new AppError('resource_not_found', `schedule ${id} does not exist`);
      refuseIfManaged(current);
      refuseIfNotOwner(current, caller);
      // what the runs are told and run with: whoever changes it becomes the creator of the runs
      const promptSetBy =
        fields.prompt === current.prompt && sameJson(fields.agentConfig, current.agent_config)
          ? (current.prompt_set_by ?? current.created_by)
          : updater;
      const rearm = fields.cronSchedule !== current.cron_schedule || !current.enabled || current.next_run_at === null;
      const nextRunAt = !fields.enabled
        ? null
        : rearm
          ? parseCron(fields.cronSchedule).nextAfter(this.#clock.now())
          : current.next_run_at;
      return sql.replaceApiSchedule(tx, id, { ...fields, nextRunAt, updatedBy: updater, promptSetBy });
    });
    await this.#changed(row);
    return row;
  }

  async delete(teamId: string, id: string, caller: ScheduleCaller): Promise<void> {
    const row = await this.#db.transaction(async (tx) => {
      const current = await sql.getSchedule(tx, teamId, id, true);
      if (!current) throw new AppError('resource_not_found', `schedule ${id} does not exist`);
      refuseIfManaged(current);
      refuseIfNotOwner(current, caller);
      await sql.deleteSchedule(tx, id);
      return current;
    });
    await this.#changed(row);
  }

  /** Pause (no fires; `next_run` cleared) or resume (next fire computed from now). Idempotent. */
  async setEnabled(teamId: string, id: string, caller: ScheduleCaller, enabled: boolean): Promise<ScheduleRow> {
    const row = await this.#db.transaction(async (tx) => {
      const current = await sql.getSchedule(tx, teamId, id, true);
      if (!current) throw new AppError('resource_not_found', `schedule ${id} does not exist`);
      refuseIfManaged(current);
      refuseIfNotOwner(current, caller);
      if (current.enabled === enabled && (!enabled || current.next_run_at)) return current;
      const nextRunAt = enabled ? nextFromNow(current.cron_schedule, this.#clock.now()) : null;
      return sql.setEnabled(tx, id, enabled, nextRunAt, caller.info);
    });
    await this.#changed(row);
    return row;
  }

  async #changed(row: ScheduleRow): Promise<void> {
    await this.#bus.publish(SCHEDULES_CHANGED_TOPIC, { team_id: row.team_id, schedule_id: row.id });
  }
}
