/** Automations as the API shows them, with whether (and why not) their webhook triggers can fire. */
import type { AutomationRow } from '../factories/apply/model.ts';
import type { Queryable } from '../kernel/db.ts';
import type { PayloadFilter } from './payload-filter.ts';

/** A live automation as the API reads it. */
export type AutomationRecord = Omit<AutomationRow, 'deleted_at'>;

export type WebhookState = 'enabled' | 'disabled' | 'deleted' | 'unknown';

export interface TriggerStatus {
  trigger_index: number;
  webhook_uid: string;
  webhook_name: string | null;
  webhook_state: WebhookState;
  payload_filter: PayloadFilter | null;
}

export async function getAutomation(q: Queryable, teamId: string, id: string): Promise<AutomationRecord | undefined> {
  const res = await q.query<AutomationRecord>(
    `SELECT id, team_id, factory_id, name, file, enabled, prompt, agent, config, triggers, created_at, updated_at
       FROM automations WHERE id = $1 AND team_id = $2 AND deleted_at IS NULL`,
    [id, teamId],
  );
  return res.rows[0];
}

export async function triggerStatuses(q: Queryable, automationId: string): Promise<TriggerStatus[]> {
  return (await triggerStatusesOf(q, [automationId])).get(automationId) ?? [];
}

/** The webhook triggers of several automations in one query, by automation id, in trigger order. */
export async function triggerStatusesOf(
  q: Queryable,
  automationIds: readonly string[],
): Promise<Map<string, TriggerStatus[]>> {
  const byAutomation = new Map<string, TriggerStatus[]>();
  if (automationIds.length === 0) return byAutomation;
  const res = await q.query<TriggerStatus & { automation_id: string }>(
    `SELECT t.automation_id, t.trigger_index, t.webhook_uid, w.name AS webhook_name, t.payload_filter,
            CASE WHEN w.uid IS NULL THEN 'unknown' WHEN w.deleted_at IS NOT NULL THEN 'deleted'
                 WHEN w.enabled THEN 'enabled' ELSE 'disabled' END AS webhook_state
       FROM automation_webhook_triggers t LEFT JOIN webhooks w ON w.uid = t.webhook_uid
      WHERE t.automation_id = ANY($1::text[]) ORDER BY t.automation_id, t.trigger_index`,
    [automationIds],
  );
  for (const { automation_id, ...status } of res.rows) {
    const list = byAutomation.get(automation_id);
    if (list) list.push(status);
    else byAutomation.set(automation_id, [status]);
  }
  return byAutomation;
}

/**
 * An automation fires while it is enabled and at least one of its triggers can: a webhook trigger selecting a
 * live, enabled webhook, or a schedule trigger.
 */
export function firingOf(
  enabled: boolean,
  triggers: readonly TriggerStatus[],
  scheduleTriggers = 0,
): { firing: boolean; not_firing_reasons: string[] } {
  const reasons: string[] = [];
  if (!enabled) reasons.push('the automation is disabled');
  for (const t of triggers) {
    const hook = t.webhook_name ? `${t.webhook_name} (${t.webhook_uid})` : t.webhook_uid;
    if (t.webhook_state === 'deleted') reasons.push(`trigger ${t.trigger_index + 1}: webhook ${hook} was deleted`);
    else if (t.webhook_state === 'disabled')
      reasons.push(`trigger ${t.trigger_index + 1}: webhook ${hook} is disabled`);
    else if (t.webhook_state === 'unknown')
      reasons.push(`trigger ${t.trigger_index + 1}: webhook ${hook} does not exist`);
  }
  const firing = enabled && (scheduleTriggers > 0 || triggers.some((t) => t.webhook_state === 'enabled'));
  if (triggers.length === 0 && scheduleTriggers === 0) reasons.push('no trigger of the automation fires here');
  return { firing, not_firing_reasons: firing ? [] : reasons };
}

export function automationView(row: AutomationRecord, triggers: readonly TriggerStatus[]) {
  return {
    id: row.id,
    factory_id: row.factory_id,
    name: row.name,
    file: row.file,
    enabled: row.enabled,
    agent: row.agent,
    prompt: row.prompt,
    config: row.config,
    triggers: row.triggers,
    webhook_triggers: [...triggers],
    ...firingOf(row.enabled, triggers, row.triggers.filter((t) => t.provider === 'schedule').length),
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** The API view of several automations (a factory's list), their trigger statuses read in one query. */
export async function automationViews(
  q: Queryable,
  rows: readonly AutomationRecord[],
): Promise<ReturnType<typeof automationView>[]> {
  const statuses = await triggerStatusesOf(
    q,
    rows.map((r) => r.id),
  );
  return rows.map((row) => automationView(row, statuses.get(row.id) ?? []));
}
