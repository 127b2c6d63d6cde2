import { expect } from 'vitest';
import type { TestServer } from '../support/server.ts';

/**
 * Connects GitHub (webhook mode), Slack and Linear to the default team with managed secrets holding these signing
 * secrets; answers each provider's events URL.
 */
export async function connectProviders(
  server: TestServer,
  secrets: { github: string; slack: string; linear: string },
): Promise<Record<string, string>> {
  for (const [name, value] of Object.entries({
    'gh-hook': secrets.github,
    'slack-signing': secrets.slack,
    'slack-bot': 'xoxb-test',
    'linear-hook': secrets.linear,
    'linear-key': 'lin_api_test',
  }))
    expect((await server.api('PUT', `/secrets/${name}`, { value })).status).toBeLessThan(300);
  const urls: Record<string, string> = {};
  for (const [provider, body] of Object.entries({
    github: { mode: 'webhook', webhook_secret_name: 'gh-hook' },
    slack: { signing_secret_name: 'slack-signing', bot_token_secret_name: 'slack-bot' },
    linear: { webhook_secret_name: 'linear-hook', api_key_secret_name: 'linear-key' },
  })) {
    const res = await server.api('PUT', `/integrations/${provider}`, body);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    urls[provider] = res.body.events_url;
  }
  return urls;
}
