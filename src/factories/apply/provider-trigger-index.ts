/**
 * The routing index of a factory's provider triggers, rebuilt by every apply: a GitHub trigger gets one row per
 * repository of the factory, a Slack or Linear trigger one row when the factory declares that integration.
 */
import type { FactoryDefinition } from '../../definitions/model.ts';
import type { FilterMatcher } from '../../definitions/model.ts';
import type { Queryable } from '../../kernel/db.ts';

const CONNECTED_PROVIDERS = new Set(['github', 'slack', 'linear']);

export function providerTriggerRows(
  factory: { id: string; teamId: string },
  definition: FactoryDefinition,
  automationIds: ReadonlyMap<string, string>,
): ProviderTriggerRow[] {
  const repositories = [...new Set(definition.factory.repositories.map((r) => `${r.owner}/${r.name}`.toLowerCase()))];
  const declared = new Set((definition.factory.integrations ?? []).map((i) => i.type));
  const rows: ProviderTriggerRow[] = [];
  for (const automation of definition.automations) {
    const automationId = automationIds.get(automation.name);
    if (!automationId) continue;
    automation.triggers.forEach((trigger, triggerIndex) => {
      if (trigger.kind !== 'provider' || !CONNECTED_PROVIDERS.has(trigger.provider)) return;
      const base = {
        automationId,
        teamId: factory.teamId,
        factoryId: factory.id,
        provider: trigger.provider,
        event: trigger.event,
        triggerIndex,
        filter: trigger.filter,
      };
      if (trigger.provider === 'github') for (const repository of repositories) rows.push({ ...base, repository });
      else if (declared.has(trigger.provider)) rows.push({ ...base, repository: '' });
    });
  }
  return rows;
}

/** Rewrites the factory's index rows to match the definition just applied (inside the apply's transaction). */
export async function reindexProviderTriggers(
  tx: Queryable,
  factory: { id: string; teamId: string },
  definition: FactoryDefinition,
): Promise<void> {
  const ids = await liveAutomationIds(tx, factory.id);
  await replaceFactoryProviderTriggers(tx, factory.id, providerTriggerRows(factory, definition, ids));
}

// ── The provider trigger index ──────────────────────────────────────────────────────────────────────────

export interface ProviderTriggerRow {
  automationId: string;
  teamId: string;
  factoryId: string;
  provider: string;
  event: string;
  triggerIndex: number;
  repository: string;
  filter: Record<string, FilterMatcher>;
}

/** Replaces a factory's rows of the index (in the apply's transaction). */
export async function replaceFactoryProviderTriggers(
  q: Queryable,
  factoryId: string,
  rows: readonly ProviderTriggerRow[],
): Promise<void> {
  await q.query('DELETE FROM automation_provider_triggers WHERE factory_id = $1', [factoryId]);
  if (rows.length === 0) return;
  await q.query(
    `INSERT INTO automation_provider_triggers (automation_id, team_id, factory_id, provider, event, trigger_index, repository, filter)
     SELECT r.automation_id, r.team_id, r.factory_id, r.provider, r.event, r.trigger_index, r.repository, r.filter
       FROM json_to_recordset($1::json) AS r(automation_id text, team_id text, factory_id text, provider text, event text,
                                             trigger_index int4, repository text, filter jsonb)
     ON CONFLICT DO NOTHING`,
    [
      JSON.stringify(
        rows.map((r) => ({
          automation_id: r.automationId,
          team_id: r.teamId,
          factory_id: r.factoryId,
          provider: r.provider,
          event: r.event,
          trigger_index: r.triggerIndex,
          repository: r.repository,
          filter: r.filter,
        })),
      ),
    ],
  );
}

export async function liveAutomationIds(q: Queryable, factoryId: string): Promise<Map<string, string>> {
  const res = await q.query<{ id: string; name: string }>(
    'SELECT id, name FROM automations WHERE factory_id = $1 AND deleted_at IS NULL',
    [factoryId],
  );
  return new Map(res.rows.map((r) => [r.name, r.id]));
}
