import { createHash } from 'node:crypto';
import { checkCron } from '../definitions/cron.ts';
import type { Db } from '../kernel/db.ts';
import type { Clock } from '../kernel/clock.ts';
import { newId } from '../kernel/ids.ts';
import { parseCron } from './cron.ts';
import * as sql from './sql.ts';
import type { LiveAutomation } from './sql.ts';

/** An inline `schedule` of a `schedule`/`cron_fired` trigger, as stored on the automation row. */
export interface InlineSchedule {
  name: string | null;
  cron: string;
}

/**
 * The inline schedules among an automation's triggers. Reads the file's form (`{provider, event, schedule}`)
 * and the validator's (`{kind: 'schedule', schedule}`), whichever the reconciler stored.
 */
export function inlineSchedulesOf(triggers: unknown): InlineSchedule[] {
  if (!Array.isArray(triggers)) return [];
  const found: InlineSchedule[] = [];
  for (const t of triggers as unknown[]) {
    if (!t || typeof t !== 'object') continue;
    const trigger = t as { provider?: unknown; kind?: unknown; schedule?: unknown };
    if (trigger.provider !== 'schedule' && trigger.kind !== 'schedule') continue;
    const schedule = trigger.schedule as { name?: unknown; cron?: unknown } | null | undefined;
    if (!schedule || typeof schedule.cron !== 'string') continue;
    found.push({
      name: typeof schedule.name === 'string' && schedule.name !== '' ? schedule.name : null,
      cron: schedule.cron.trim(),
    });
  }
  return found;
}

export interface SyncResult {
  created: number;
  updated: number;
  deleted: number;
  /** Inline schedules left out because their cron does not parse (the validator should have refused them). */
  skipped: { automation: string; schedule: string | null; problem: string }[];
}

const SYNC_LOCK_NAMESPACE = 7_242_040;

function lockKeyOf(factoryId: string): number {
  return createHash('sha256').update(factoryId).digest().readInt32BE(0);
}

interface Desired {
  automation: LiveAutomation;
  triggerName: string;
  name: string;
  cron: string;
}

/**
 * Makes the factory's automation schedules match its live automation rows. The schedule name is the
 * identity within an automation: the same name with a new cron is updated in place (same schedule id, next
 * fire recomputed from now), a new name is a new schedule, and a schedule no longer declared is deleted.
 * A disabled automation keeps its schedules, paused. Safe to run from several processes at once.
 */
export async function syncFactorySchedules(db: Db, factoryId: string, clock: Pick<Clock, 'now'>): Promise<SyncResult> {
  return db.transaction(async (tx) => {
    await sql.lockFactorySync(tx, SYNC_LOCK_NAMESPACE, lockKeyOf(factoryId));
    // read under the lock: a sync that waited for it re-arms from when it reads the automations, not from before
    const now = clock.now();
    const result: SyncResult = { created: 0, updated: 0, deleted: 0, skipped: [] };
    const desired = new Map<string, Desired>();
    for (const automation of await sql.liveAutomationsOfFactory(tx, factoryId)) {
      for (const schedule of inlineSchedulesOf(automation.triggers)) {
        const problem = checkCron(schedule.cron);
        if (problem) {
          result.skipped.push({ automation: automation.name, schedule: schedule.name, problem });
          continue;
        }
        const triggerName = schedule.name ?? '';
        desired.set(`${automation.name}\u0000${triggerName}`, {
          automation,
          triggerName,
          name: schedule.name ?? automation.name,
          cron: schedule.cron,
        });
      }
    }

    for (const row of await sql.automationSchedulesOfFactory(tx, factoryId)) {
      const key = `${row.automation_name}\u0000${row.trigger_name}`;
      const want = desired.get(key);
      if (!want) {
        await sql.deleteSchedule(tx, row.id);
        result.deleted++;
        continue;
      }
      desired.delete(key);
      const enabled = want.automation.enabled;
      const rearm = want.cron !== row.cron_schedule || !row.enabled || row.next_run_at === null;
      const nextRunAt = !enabled ? null : rearm ? parseCron(want.cron).nextAfter(now) : row.next_run_at;
      const same =
        row.name === want.name &&
        row.cron_schedule === want.cron &&
        row.enabled === enabled &&
        row.prompt === want.automation.prompt &&
        row.automation_id === want.automation.id &&
        (row.next_run_at?.getTime() ?? null) === (nextRunAt?.getTime() ?? null);
      if (same) continue;
      await sql.updateAutomationSchedule(tx, row.id, {
        name: want.name,
        cronSchedule: want.cron,
        enabled,
        prompt: want.automation.prompt,
        automationId: want.automation.id,
        nextRunAt,
      });
      result.updated++;
    }

    for (const want of desired.values()) {
      await sql.insertAutomationSchedule(tx, {
        id: newId('sch'),
        teamId: want.automation.team_id,
        factoryId,
        automationName: want.automation.name,
        triggerName: want.triggerName,
        name: want.name,
        cronSchedule: want.cron,
        enabled: want.automation.enabled,
        prompt: want.automation.prompt,
        automationId: want.automation.id,
        nextRunAt: want.automation.enabled ? parseCron(want.cron).nextAfter(now) : null,
      });
      result.created++;
    }
    return result;
  });
}
