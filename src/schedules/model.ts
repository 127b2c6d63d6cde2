import type { AgentConfig, Creator } from '../runs/model.ts';

/** RunCreatorInfo as the API answers it (`created_by`, `updated_by`). */
export interface CreatorInfo {
  type: 'user' | 'service_account';
  uid: string;
  display_name: string;
  email?: string;
}

export type ScheduleOrigin = 'api' | 'automation';

export interface ScheduleRow {
  id: string;
  team_id: string;
  origin: ScheduleOrigin;
  name: string;
  cron_schedule: string;
  enabled: boolean;
  prompt: string;
  agent_config: AgentConfig;
  metadata: Record<string, string>;
  factory_id: string | null;
  automation_name: string | null;
  automation_id: string | null;
  trigger_name: string | null;
  next_run_at: Date | null;
  last_ran_at: Date | null;
  last_spawn_error: string | null;
  created_by: CreatorInfo | null;
  updated_by: CreatorInfo | null;
  /** Who last set the prompt or agent configuration: the creator of the runs it starts (migration 0074). */
  prompt_set_by: CreatorInfo | null;
  created_at: Date;
  updated_at: Date;
}

/** The Oz API's ScheduledAgentItem, plus where a factory-declared schedule comes from. */
export interface ScheduledAgentItem {
  id: string;
  name: string;
  cron_schedule: string;
  enabled: boolean;
  prompt: string;
  created_at: string;
  updated_at: string;
  last_spawn_error: string | null;
  agent_config: AgentConfig;
  created_by?: CreatorInfo;
  updated_by?: CreatorInfo;
  prompt_set_by?: CreatorInfo;
  history: { last_ran: string | null; next_run: string | null };
  scope: { type: 'Team'; uid: string };
  metadata: Record<string, string>;
  /** Set on schedules declared in an automation file (read-only here). */
  factory_uid?: string;
  automation_id?: string;
  automation_name?: string;
}

/** What a run records about the schedule that fired it (RunItem.schedule). */
export interface ScheduleInfo {
  schedule_id: string;
  schedule_name: string;
  cron_schedule: string;
}

export function creatorInfo(c: Creator): CreatorInfo {
  return { type: c.type, uid: c.id, display_name: c.displayName, ...(c.email ? { email: c.email } : {}) };
}

export function creatorOfInfo(info: CreatorInfo | null): Creator | null {
  if (!info) return null;
  return { id: info.uid, type: info.type, displayName: info.display_name, email: info.email ?? null };
}

export function toScheduledAgentItem(row: ScheduleRow): ScheduledAgentItem {
  return {
    id: row.id,
    name: row.name,
    cron_schedule: row.cron_schedule,
    enabled: row.enabled,
    prompt: row.prompt,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    last_spawn_error: row.last_spawn_error,
    agent_config: row.agent_config,
    ...(row.created_by ? { created_by: row.created_by } : {}),
    ...(row.updated_by ? { updated_by: row.updated_by } : {}),
    ...(row.prompt_set_by ? { prompt_set_by: row.prompt_set_by } : {}),
    history: {
      last_ran: row.last_ran_at ? row.last_ran_at.toISOString() : null,
      next_run: row.enabled && row.next_run_at ? row.next_run_at.toISOString() : null,
    },
    scope: { type: 'Team', uid: row.team_id },
    metadata: row.metadata,
    ...(row.origin === 'automation' && row.factory_id ? { factory_uid: row.factory_id } : {}),
    ...(row.automation_id ? { automation_id: row.automation_id } : {}),
    ...(row.automation_name ? { automation_name: row.automation_name } : {}),
  };
}

export function scheduleInfoOf(row: ScheduleRow): ScheduleInfo {
  return { schedule_id: row.id, schedule_name: row.name, cron_schedule: row.cron_schedule };
}
