import { AUTOMATION_AGENT_PROMPT_SQL, AUTOMATION_CONCURRENCY_SQL } from '../automations/run-input.ts';
import type { AutomationRow } from '../factories/apply/model.ts';
import type { Queryable } from '../kernel/db.ts';
import type { AgentConfig } from '../engine/model.ts';
import type { CreatorInfo, ScheduleRow } from './model.ts';

export interface ScheduleFields {
  name: string;
  cronSchedule: string;
  enabled: boolean;
  prompt: string;
  agentConfig: AgentConfig;
  metadata: Record<string, string>;
  nextRunAt: Date | null;
}

/** The fields' parameters in the order both statements list their columns. */
const fieldParams = (s: ScheduleFields) => [
  s.name,
  s.cronSchedule,
  s.enabled,
  s.prompt,
  JSON.stringify(s.agentConfig),
  JSON.stringify(s.metadata),
  s.nextRunAt,
];

export async function insertApiSchedule(
  q: Queryable,
  s: ScheduleFields & { id: string; teamId: string; createdBy: CreatorInfo },
): Promise<ScheduleRow> {
  const res = await q.query<ScheduleRow>(
    `INSERT INTO schedules (id, team_id, origin, name, cron_schedule, enabled, prompt, agent_config, metadata, next_run_at,
       created_by, updated_by, prompt_set_by)
     VALUES ($1, $2, 'api', $3, $4, $5, $6, $7, $8, $9, $10, $10, $10)
     RETURNING *`,
    [s.id, s.teamId, ...fieldParams(s), JSON.stringify(s.createdBy)],
  );
  return res.rows[0]!;
}

export async function getSchedule(
  q: Queryable,
  teamId: string,
  id: string,
  forUpdate = false,
): Promise<ScheduleRow | undefined> {
  const res = await q.query<ScheduleRow>(
    `SELECT * FROM schedules WHERE team_id = $1 AND id = $2${forUpdate ? ' FOR UPDATE' : ''}`,
    [teamId, id],
  );
  return res.rows[0];
}

export async function listSchedules(q: Queryable, teamId: string): Promise<ScheduleRow[]> {
  const res = await q.query<ScheduleRow>('SELECT * FROM schedules WHERE team_id = $1 ORDER BY name, id', [teamId]);
  return res.rows;
}

export async function replaceApiSchedule(
  q: Queryable,
  id: string,
  s: ScheduleFields & { updatedBy: CreatorInfo; promptSetBy: CreatorInfo | null },
): Promise<ScheduleRow> {
  const res = await q.query<ScheduleRow>(
    `UPDATE schedules SET name = $2, cron_schedule = $3, enabled = $4, prompt = $5, agent_config = $6, metadata = $7,
       next_run_at = $8, updated_by = $9, prompt_set_by = $10, updated_at = ay_now()
     WHERE id = $1 RETURNING *`,
    [id, ...fieldParams(s), JSON.stringify(s.updatedBy), s.promptSetBy ? JSON.stringify(s.promptSetBy) : null],
  );
  return res.rows[0]!;
}

export async function setEnabled(
  q: Queryable,
  id: string,
  enabled: boolean,
  nextRunAt: Date | null,
  updatedBy: CreatorInfo,
): Promise<ScheduleRow> {
  const res = await q.query<ScheduleRow>(
    `UPDATE schedules SET enabled = $2, next_run_at = $3, updated_by = $4, updated_at = ay_now() WHERE id = $1 RETURNING *`,
    [id, enabled, nextRunAt, JSON.stringify(updatedBy)],
  );
  return res.rows[0]!;
}

export async function deleteSchedule(q: Queryable, id: string): Promise<void> {
  await q.query('DELETE FROM schedules WHERE id = $1', [id]);
}

/** Due schedules, locked for this transaction; rows another process holds are skipped, not waited for. */
export async function claimDue(q: Queryable, now: Date, limit: number): Promise<ScheduleRow[]> {
  const res = await q.query<ScheduleRow>(
    `SELECT * FROM schedules WHERE enabled AND next_run_at IS NOT NULL AND next_run_at <= $1
     ORDER BY next_run_at, id LIMIT $2 FOR UPDATE SKIP LOCKED`,
    [now, limit],
  );
  return res.rows;
}

export async function earliestNextRun(q: Queryable): Promise<Date | null> {
  const res = await q.query<{ next: Date | null }>(
    'SELECT min(next_run_at) AS next FROM schedules WHERE enabled AND next_run_at IS NOT NULL',
  );
  return res.rows[0]?.next ?? null;
}

/** Records a fired slot; false when that slot was already fired (by any process). */
export async function recordFire(
  q: Queryable,
  f: { scheduleId: string; scheduledFor: Date; firedAt: Date; runIds: string[]; error: string | null; firedBy: string },
): Promise<boolean> {
  const res = await q.query(
    `INSERT INTO schedule_fires (schedule_id, scheduled_for, fired_at, run_ids, error, fired_by)
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (schedule_id, scheduled_for) DO NOTHING`,
    [f.scheduleId, f.scheduledFor, f.firedAt, f.runIds, f.error, f.firedBy],
  );
  return res.rowCount > 0;
}

export async function markFired(
  q: Queryable,
  id: string,
  f: { nextRunAt: Date | null; ranAt: Date | null; error: string | null },
): Promise<void> {
  await q.query(
    `UPDATE schedules SET next_run_at = $2, last_ran_at = coalesce($3, last_ran_at), last_spawn_error = $4 WHERE id = $1`,
    [id, f.nextRunAt, f.ranAt, f.error],
  );
}

export async function pruneFires(q: Queryable, before: Date): Promise<void> {
  await q.query('DELETE FROM schedule_fires WHERE fired_at < $1', [before]);
}

/** A live automation of a live factory, as a schedule fire reads it. */
export type LiveAutomation = Omit<AutomationRow, 'created_at' | 'updated_at' | 'deleted_at'> & {
  /** The prompt of the agent the automation runs (the run's base prompt), from the applied definition. */
  agent_prompt: string | null;
  /** The automation's `concurrency` as applied (null: none). */
  concurrency: unknown;
};

const LIVE_AUTOMATION = `SELECT a.id, a.team_id, a.factory_id, a.name, a.file, a.enabled, a.prompt, a.agent, a.config, a.triggers,
    ${AUTOMATION_AGENT_PROMPT_SQL} AS agent_prompt, ${AUTOMATION_CONCURRENCY_SQL} AS concurrency
  FROM automations a JOIN factories f ON f.id = a.factory_id
  WHERE a.deleted_at IS NULL AND f.deleted_at IS NULL`;

export async function getLiveAutomation(q: Queryable, id: string): Promise<LiveAutomation | undefined> {
  const res = await q.query<LiveAutomation>(`${LIVE_AUTOMATION} AND a.id = $1`, [id]);
  return res.rows[0];
}

export async function liveAutomationsOfFactory(q: Queryable, factoryId: string): Promise<LiveAutomation[]> {
  const res = await q.query<LiveAutomation>(`${LIVE_AUTOMATION} AND a.factory_id = $1 ORDER BY a.name`, [factoryId]);
  return res.rows;
}

/**
 * Enabled automations of the team with a schedule trigger selecting `scheduleId` through
 * `filter.schedule_ids` (a bare list or `{in: [...]}`, as written in the file).
 */
export async function automationsSelectingSchedule(
  q: Queryable,
  teamId: string,
  scheduleId: string,
): Promise<LiveAutomation[]> {
  const res = await q.query<LiveAutomation>(
    `${LIVE_AUTOMATION} AND a.team_id = $1 AND a.enabled AND EXISTS (
       SELECT 1 FROM jsonb_array_elements(CASE WHEN jsonb_typeof(a.triggers) = 'array' THEN a.triggers ELSE '[]'::jsonb END) t
       WHERE t->>'provider' = 'schedule' AND (
         (jsonb_typeof(t->'filter'->'schedule_ids') = 'array' AND t->'filter'->'schedule_ids' ? $2)
         OR (jsonb_typeof(t->'filter'->'schedule_ids'->'in') = 'array' AND t->'filter'->'schedule_ids'->'in' ? $2)
         OR (jsonb_typeof(t->'scheduleIds') = 'array' AND t->'scheduleIds' ? $2)))
     ORDER BY a.id`,
    [teamId, scheduleId],
  );
  return res.rows;
}

export async function automationSchedulesOfFactory(q: Queryable, factoryId: string): Promise<ScheduleRow[]> {
  const res = await q.query<ScheduleRow>(
    `SELECT * FROM schedules WHERE origin = 'automation' AND factory_id = $1 ORDER BY automation_name, trigger_name FOR UPDATE`,
    [factoryId],
  );
  return res.rows;
}

export interface AutomationScheduleFields {
  name: string;
  cronSchedule: string;
  enabled: boolean;
  prompt: string;
  automationId: string;
  nextRunAt: Date | null;
}

export async function insertAutomationSchedule(
  q: Queryable,
  s: AutomationScheduleFields & {
    id: string;
    teamId: string;
    factoryId: string;
    automationName: string;
    triggerName: string;
  },
): Promise<void> {
  await q.query(
    `INSERT INTO schedules (id, team_id, origin, name, cron_schedule, enabled, prompt, factory_id, automation_name,
       automation_id, trigger_name, next_run_at)
     VALUES ($1, $2, 'automation', $3, $4, $5, $6, $7, $8, $9, $10, $11)
     ON CONFLICT (factory_id, automation_name, trigger_name) WHERE origin = 'automation' DO NOTHING`,
    [
      s.id,
      s.teamId,
      s.name,
      s.cronSchedule,
      s.enabled,
      s.prompt,
      s.factoryId,
      s.automationName,
      s.automationId,
      s.triggerName,
      s.nextRunAt,
    ],
  );
}

export async function updateAutomationSchedule(q: Queryable, id: string, s: AutomationScheduleFields): Promise<void> {
  await q.query(
    `UPDATE schedules SET name = $2, cron_schedule = $3, enabled = $4, prompt = $5, automation_id = $6, next_run_at = $7,
       updated_at = ay_now()
     WHERE id = $1`,
    [id, s.name, s.cronSchedule, s.enabled, s.prompt, s.automationId, s.nextRunAt],
  );
}

/** Factories that have automations or automation schedules (the periodic full re-sync walks these). */
export async function factoriesWithSchedules(q: Queryable): Promise<string[]> {
  const res = await q.query<{ factory_id: string }>(
    `SELECT factory_id FROM automations WHERE deleted_at IS NULL AND triggers::text LIKE '%schedule%'
     UNION SELECT factory_id FROM schedules WHERE origin = 'automation'`,
  );
  return res.rows.map((r) => r.factory_id);
}

/** Records the runs a fire created (and what failed) on its slot. */
export async function recordFireRuns(
  q: Queryable,
  scheduleId: string,
  slot: Date,
  runIds: readonly string[],
  error: string | null,
): Promise<void> {
  await q.query('UPDATE schedule_fires SET run_ids = $3, error = $4 WHERE schedule_id = $1 AND scheduled_for = $2', [
    scheduleId,
    slot,
    runIds,
    error,
  ]);
}

/** Serialises the syncs of one factory's inline schedules, for the transaction. */
export async function lockFactorySync(q: Queryable, namespace: number, key: number): Promise<void> {
  await q.query('SELECT pg_advisory_xact_lock($1, $2)', [namespace, key]);
}
