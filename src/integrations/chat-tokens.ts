/**
 * The Slack bot token and the Linear API key a factory's runs get when the factory declares that integration
 * (`integrations: [{type: slack}]`): SLACK_BOT_TOKEN and LINEAR_API_KEY in the agent's environment.
 */
import type { Queryable } from '../kernel/db.ts';
import type { SecretProvider } from '../secrets/provider.ts';
import { declaredConnections } from './sql.ts';

const TOKEN_OF: Record<string, { setting: string; env: string }> = {
  slack: { setting: 'bot_token_secret_name', env: 'SLACK_BOT_TOKEN' },
  linear: { setting: 'api_key_secret_name', env: 'LINEAR_API_KEY' },
};

export async function chatRunEnv(
  q: Queryable,
  secrets: SecretProvider,
  run: { team_id: string; factory_id: string | null },
): Promise<Record<string, string>> {
  if (!run.factory_id) return {};
  const env: Record<string, string> = {};
  for (const { provider, settings } of await declaredConnections(q, run.factory_id)) {
    const token = TOKEN_OF[provider];
    const name = token ? settings[token.setting] : undefined;
    if (!token || !name) continue;
    const value = await secrets.get(run.team_id, name);
    if (value) env[token.env] = value.trim();
  }
  return env;
}
