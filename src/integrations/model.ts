/** The connections a team makes to GitHub, Slack and Linear: what is stored (secret names, never values). */

export const PROVIDERS = ['github', 'slack', 'linear'] as const;
export type Provider = (typeof PROVIDERS)[number];

export function isProvider(value: string): value is Provider {
  return (PROVIDERS as readonly string[]).includes(value);
}

export type GithubSettings =
  | { mode: 'webhook'; webhook_secret_name: string }
  | { mode: 'app'; app_id: string; private_key_secret_name: string; webhook_secret_name: string };
export interface SlackSettings {
  signing_secret_name: string;
  bot_token_secret_name: string;
}
export interface LinearSettings {
  webhook_secret_name: string;
  api_key_secret_name: string;
}
export type ConnectionSettings = GithubSettings | SlackSettings | LinearSettings;

export interface ConnectionRow {
  id: string;
  team_id: string;
  provider: Provider;
  settings: Record<string, string>;
  secret_version: number;
  last_event_at: Date | null;
  last_event: string | null;
  last_error_at: Date | null;
  last_error: string | null;
  created_at: Date;
  updated_at: Date;
}

/** The managed secret that signs a provider's deliveries, by the connection's settings. */
export function signingSecretName(provider: Provider, settings: Record<string, string>): string | undefined {
  return provider === 'slack' ? settings.signing_secret_name : settings.webhook_secret_name;
}

/** Which signature scheme of the ingress's registry verifies each provider's deliveries. */
export const SIGNATURE_SCHEME_OF: Record<Provider, string> = { github: 'github', slack: 'slack', linear: 'linear' };

/** The run source the official clients know for runs each provider's events start (oz-agent-sdk RunSourceType). */
export const RUN_SOURCE_OF = { github: 'GITHUB_ACTION', slack: 'SLACK', linear: 'LINEAR' } as const satisfies Record<
  Provider,
  string
>;

export { INTEGRATIONS_CHANGED_TOPIC } from '../kernel/topics.ts';
