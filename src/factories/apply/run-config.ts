import type { ResolvedExecution, Trigger } from '../../definitions/model.ts';
import type { AgentConfig } from '../../engine/model.ts';
import type { StoredTrigger } from './model.ts';

const AUTH_SECRET_KEY: Record<string, keyof NonNullable<AgentConfig['harness_auth_secrets']>> = {
  claude: 'claude_auth_secret_name',
  codex: 'codex_auth_secret_name',
  gemini: 'gemini_auth_secret_name',
  agentyard: 'agentyard_auth_secret_name',
};

/**
 * The run configuration (the Run API's AmbientAgentConfig) that resolved execution settings stand for:
 * what automations store for the runs they start and what `POST /factories/{id}/runs` starts from.
 */
export function runConfigFor(execution: ResolvedExecution, name: string): AgentConfig {
  const config: AgentConfig = { name };
  const harness = execution.harness;
  if (harness.type === 'oz') {
    config.model_id = harness.model;
  } else {
    config.harness = {
      type: harness.type,
      model_id: harness.model,
      ...(harness.reasoningLevel ? { reasoning_level: harness.reasoningLevel } : {}),
      ...(harness.type === 'agentyard' && harness.baseUrl ? { base_url: harness.baseUrl } : {}),
    };
    const key = AUTH_SECRET_KEY[harness.type];
    if (harness.auth?.source === 'managedSecret' && key)
      config.harness_auth_secrets = { [key]: harness.auth.secretName };
  }
  if (execution.environmentId) config.environment_id = execution.environmentId;
  if (execution.workerHost) config.worker_host = execution.workerHost;
  if (execution.runner) config.runner_id = execution.runner;
  if (execution.budget?.maxDurationSeconds) config.max_duration_seconds = execution.budget.maxDurationSeconds;
  if (execution.budget?.maxTurns) config.max_turns = execution.budget.maxTurns;
  if (execution.budget?.maxTokens) config.max_tokens = execution.budget.maxTokens;
  if (execution.budget?.maxCostUsd) config.max_cost_usd = execution.budget.maxCostUsd;
  const servers = Object.entries(execution.mcpServers);
  if (servers.length > 0)
    config.mcp_servers = Object.fromEntries(servers.map(([n, ref]) => [n, { warp_id: ref.warpId }]));
  return config;
}

/** A normalised trigger back in the definition-file shape, as `automations.triggers` stores it. */
export function storedTrigger(trigger: Trigger): StoredTrigger {
  switch (trigger.kind) {
    case 'webhook':
      return {
        provider: 'webhook',
        event: 'received',
        filter: {
          webhook_ids: [trigger.webhookUid ?? trigger.webhookName ?? ''],
          ...(trigger.payload !== null ? { payload: trigger.payload } : {}),
        },
      };
    case 'schedule':
      return {
        provider: 'schedule',
        event: 'cron_fired',
        ...(trigger.scheduleIds.length > 0 ? { filter: { schedule_ids: trigger.scheduleIds } } : {}),
        ...(trigger.schedule
          ? {
              schedule: {
                ...(trigger.schedule.name !== null ? { name: trigger.schedule.name } : {}),
                cron: trigger.schedule.cron,
              },
            }
          : {}),
      };
    case 'provider':
      return {
        provider: trigger.provider,
        event: trigger.event,
        ...(Object.keys(trigger.filter).length > 0 ? { filter: trigger.filter } : {}),
      };
  }
}
