/**
 * The routing index of a factory's provider triggers, rebuilt by every apply: a GitHub trigger gets one row per
 * repository of the factory, a Slack or Linear trigger one row when the factory declares that integration.
 */
import type { FactoryDefinition } from '../../definitions/model.ts';
import type { FilterMatcher } from '../../definitions/model.ts';
import type { Queryable } from '../../kernel/db.ts';
import { liveAutomationIds, replaceFactoryProviderTriggers } from './sql.ts';

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
