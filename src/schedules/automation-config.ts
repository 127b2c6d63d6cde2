import type { AgentConfig, McpServerConfig } from '../runs/model.ts';

/**
 * The run configuration of an automation's runs, from the `config` the reconciler stored on its row. That
 * column holds the resolved execution settings of the definition (ResolvedExecution: `harness`, `runner`,
 * `environmentId`, `secrets`, `mcpServers`, `workerHost`); keys already in the Run API's snake_case form are
 * taken as they are, so either shape works.
 */
export function agentConfigOfAutomation(automation: { name: string; agent: string | null; config: Record<string, unknown> }): AgentConfig {
  const raw = automation.config ?? {};
  const config: AgentConfig = {};
  for (const [key, value] of Object.entries(raw)) {
    if (/^[a-z0-9_]+$/.test(key) && !['harness', 'model', 'runner', 'secrets'].includes(key)) config[key] = value;
  }

  const harness = raw.harness as
    | { type?: string; model?: string | null; model_id?: string; reasoningLevel?: string | null; reasoning_level?: string; auth?: { source?: string; secretName?: string } | null }
    | undefined;
  if (harness && typeof harness === 'object') {
    const model = harness.model ?? harness.model_id;
    const reasoning = harness.reasoningLevel ?? harness.reasoning_level;
    config.harness = {
      ...(harness.type ? { type: harness.type } : {}),
      ...(model ? { model_id: model } : {}),
      ...(reasoning ? { reasoning_level: reasoning } : {}),
    };
    if (model && config.model_id === undefined) config.model_id = model;
    if (harness.auth?.source === 'managedSecret' && harness.auth.secretName && harness.type && harness.type !== 'oz') {
      config.harness_auth_secrets = { ...(config.harness_auth_secrets ?? {}), [`${harness.type}_auth_secret_name`]: harness.auth.secretName };
    }
  }
  if (typeof raw.model === 'string' && config.model_id === undefined) config.model_id = raw.model;
  if (typeof raw.runner === 'string') config.runner_id = raw.runner;
  if (typeof raw.environmentId === 'string') config.environment_id = raw.environmentId;
  if (typeof raw.workerHost === 'string') config.worker_host = raw.workerHost;
  if (Array.isArray(raw.secrets)) config.secrets = raw.secrets.filter((s): s is string => typeof s === 'string');
  const servers = raw.mcpServers as Record<string, { warpId?: string } & McpServerConfig> | undefined;
  if (servers && typeof servers === 'object') {
    config.mcp_servers = Object.fromEntries(
      Object.entries(servers).map(([name, s]) => [name, s.warpId !== undefined ? { warp_id: s.warpId } : s]),
    );
  }
  config.name ??= automation.name;
  return config;
}
