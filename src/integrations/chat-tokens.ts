/**
 * The Slack bot token and the Linear API key are not handed to a factory's agents: the factory interface's `reply`
 * and `ask_user` post with them on the agent's behalf (docs/orchestration.md). A run gets one only when it asks
 * for it explicitly, by naming the managed secret that holds it (the connection's `bot_token_secret_name`,
 * `api_key_secret_name`) in its `secrets` (docs/security.md, "Provider tokens and agents"): then as
 * SLACK_BOT_TOKEN or LINEAR_API_KEY, for a factory that declares the integration.
 */
import type { SecretProvider } from '../secrets/provider.ts';

/** The providers whose token a run may ask for: the connection setting naming its secret, the variable it is lent in. */
export const CHAT_TOKENS: readonly { provider: string; setting: string; env: string }[] = [
  { provider: 'linear', setting: 'api_key_secret_name', env: 'LINEAR_API_KEY' },
  { provider: 'slack', setting: 'bot_token_secret_name', env: 'SLACK_BOT_TOKEN' },
];

/** The variables of the tokens a run asked for (`asked`: the providers and their secrets' names), read from the team's secrets. */
export async function askedChatTokenEnv(
  secrets: SecretProvider,
  teamId: string,
  asked: readonly { provider: string; secret: string }[],
): Promise<Record<string, string>> {
  const env: Record<string, string> = {};
  for (const { provider, secret } of asked) {
    const token = CHAT_TOKENS.find((t) => t.provider === provider);
    const value = token ? (await secrets.get(teamId, secret))?.trim() : undefined;
    if (token && value) env[token.env] = value;
  }
  return env;
}
