import { createHmac, randomBytes } from 'node:crypto';
import examples from '@octokit/webhooks-examples/api.github.com/index.json' with { type: 'json' };
import { sign } from '@octokit/webhooks-methods';
import { expect } from 'vitest';
import { post } from '../ingress/support.ts';
import type { RawResponse } from '../ingress/support.ts';
import type { Engine } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';

/** The signing secrets of a team's GitHub (webhook), Slack and Linear connections. */
export interface ProviderSecrets {
  github: string;
  slack: string;
  linear: string;
}

/**
 * Connects GitHub (webhook mode), Slack and Linear to the default team with managed secrets holding these signing
 * secrets; answers each provider's events URL.
 */
export async function connectProviders(server: TestServer, secrets: ProviderSecrets): Promise<Record<string, string>> {
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

/** A server with the three providers connected (connectProviders) under fresh secrets, and how to sign for them. */
export interface ConnectedServer {
  server: TestServer;
  secrets: ProviderSecrets;
  /** Each provider's events URL. */
  urls: Record<string, string>;
  /** Posts a GitHub webhook delivery of `event` (X-GitHub-Event), signed with the connection's secret or `secret`. */
  postGithub(event: string, payload: unknown, delivery: string, secret?: string): Promise<RawResponse>;
  /** The headers of a Slack request signed with the connection's secret at `at` (seconds; default now). */
  slackHeaders(body: string, at?: number): Record<string, string>;
}

export async function startConnectedServer(engine: Engine): Promise<ConnectedServer> {
  const secrets: ProviderSecrets = {
    github: randomBytes(20).toString('hex'),
    slack: randomBytes(16).toString('hex'),
    linear: `lin_wh_${randomBytes(16).toString('hex')}`,
  };
  const server = await startTestServer(engine);
  try {
    const urls = await connectProviders(server, secrets);
    return {
      server,
      secrets,
      urls,
      async postGithub(event, payload, delivery, secret = secrets.github) {
        const body = JSON.stringify(payload);
        return post(urls.github!, body, {
          'content-type': 'application/json',
          'x-github-event': event,
          'x-github-delivery': delivery,
          'x-hub-signature-256': await sign(secret, body),
        });
      },
      slackHeaders(body, at = Math.floor(Date.now() / 1000)) {
        const signature = createHmac('sha256', secrets.slack).update(`v0:${at}:${body}`).digest('hex');
        return {
          'content-type': 'application/json',
          'x-slack-request-timestamp': String(at),
          'x-slack-signature': `v0=${signature}`,
        };
      },
    };
  } catch (err) {
    await server.close();
    throw err;
  }
}

/** A copy of GitHub's published example payload of `event` with `action` (@octokit/webhooks-examples). */
export function githubExample(event: string, action: string): Record<string, any> {
  const entry = (examples as { name: string; examples: Record<string, any>[] }[]).find((e) => e.name === event)!;
  return structuredClone(entry.examples.find((x) => x.action === action)!);
}
