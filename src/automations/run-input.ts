/** What every run an automation starts has in common, whether a webhook delivery or a schedule fired it. */
import type { AutomationRow } from '../factories/apply/model.ts';
import type { Creator } from '../engine/model.ts';
import type { CreateRunInput } from '../runs/service.ts';
import type { SubscribedAutomation } from './sql.ts';

export type StartingAutomation = Pick<AutomationRow, 'id' | 'team_id' | 'factory_id' | 'name' | 'config'>;

/**
 * SQL for the prompt of the agent an automation runs, the base prompt of its runs, from the factory's applied
 * definition: the agent the automation names, else the factory's foreman (an automation's `agent` defaults
 * to the foreman, docs/factory-files.md). The query names the automation `a` and its factory `f`.
 */
export const AUTOMATION_AGENT_PROMPT_SQL = `(SELECT ag->>'prompt' FROM jsonb_array_elements(
        CASE WHEN jsonb_typeof(f.definition->'agents') = 'array' THEN f.definition->'agents' ELSE '[]'::jsonb END) ag
      WHERE ag->>'name' = coalesce(a.agent, f.definition->>'foreman') LIMIT 1)`;

/**
 * SQL for the automation's `concurrency` as its factory's applied definition holds it (null: none). The query
 * names the automation `a` and its factory `f`.
 */
export const AUTOMATION_CONCURRENCY_SQL = `(SELECT au->'concurrency' FROM jsonb_array_elements(
        CASE WHEN jsonb_typeof(f.definition->'automations') = 'array' THEN f.definition->'automations' ELSE '[]'::jsonb END) au
      WHERE au->>'name' = a.name LIMIT 1)`;

/** The automation is the creator of the runs it starts (a service account named after it). */
export function automationCreator(automation: Pick<AutomationRow, 'id' | 'name'>): Creator {
  return { type: 'service_account', id: automation.id, displayName: `automation ${automation.name}`, email: null };
}

/**
 * The team, factory, creator and run configuration of a run the automation starts: the configuration the
 * reconciler stored on its row, with the prompt of the automation's agent as the base prompt unless that
 * configuration names one.
 */
export function automationRunBase(
  automation: StartingAutomation,
  agentPrompt: string | null | undefined,
): Required<Pick<CreateRunInput, 'teamId' | 'config' | 'creator' | 'factoryId' | 'automationId'>> {
  const config = { ...automation.config };
  if (agentPrompt && config.base_prompt === undefined) config.base_prompt = agentPrompt;
  return {
    teamId: automation.team_id,
    config,
    creator: automationCreator(automation),
    factoryId: automation.factory_id,
    automationId: automation.id,
  };
}

/** The run base of a subscribed automation's run, and the automation as its prompt envelope names it. */
export function subscribedRun(sub: SubscribedAutomation): {
  base: ReturnType<typeof automationRunBase>;
  automation: { id: string; name: string; prompt: string };
} {
  const { automation_id: id, automation_name: name } = sub;
  const starting = { id, name, team_id: sub.team_id, factory_id: sub.factory_id, config: sub.config };
  return { base: automationRunBase(starting, sub.agent_prompt), automation: { id, name, prompt: sub.prompt } };
}
