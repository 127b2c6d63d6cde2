/**
 * Provider events have a budget per connection, not the webhook ingress's per-sender budget: a provider posts a
 * team's whole traffic from a few addresses. Only deliveries whose signature checks out spend it; past it the
 * answer is 429 with Retry-After, and another connection's budget is untouched.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { sign } from '@octokit/webhooks-methods';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_INGRESS_LIMITS } from '../../src/ingress/limits.ts';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { post } from '../ingress/support.ts';

const BUDGET = DEFAULT_INGRESS_LIMITS.senderPoints + 20;

describe.each(ENGINES)('the provider event budget on %s', (engine) => {
  let server: TestServer;
  const githubSecret = randomBytes(20).toString('hex');
  const slackSecret = randomBytes(16).toString('hex');
  const urls: Record<string, string> = {};

  beforeAll(async () => {
    server = await startTestServer(engine, {
      config: { providerEventsPerMinute: BUDGET },
      compose: { ingress: { limits: { failedAuthPoints: 1_000 } } },
    });
    for (const [name, value] of Object.entries({ 'gh-hook': githubSecret, 'slack-signing': slackSecret }))
      expect((await server.api('PUT', `/secrets/${name}`, { value })).status).toBeLessThan(300);
    for (const [provider, body] of Object.entries({
      github: { mode: 'webhook', webhook_secret_name: 'gh-hook' },
      slack: { signing_secret_name: 'slack-signing' },
    })) {
      const res = await server.api('PUT', `/integrations/${provider}`, body);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      urls[provider] = res.body.events_url;
    }
  });
  afterAll(async () => server?.close());

  async function ping(n: number, secret = githubSecret) {
    const body = JSON.stringify({ zen: 'Keep it logically awesome.', hook_id: n });
    return post(urls.github!, body, {
      'content-type': 'application/json',
      'x-github-event': 'ping',
      'x-github-delivery': `d0d0d0d0-0000-4000-8000-${String(n).padStart(12, '0')}`,
      'x-hub-signature-256': await sign(secret, body),
    });
  }

  it('admits more than the per-sender webhook limit from one address, then answers 429 with Retry-After', async () => {
    // Unsigned requests spend nothing of the connection's budget.
    for (let i = 0; i < 10; i++) expect((await ping(10_000 + i, 'not-the-secret')).status).toBe(401);
    const statuses: number[] = [];
    for (let i = 0; i < BUDGET; i++) statuses.push((await ping(i)).status);
    expect(statuses.filter((s) => s !== 202)).toEqual([]);
    const over = await ping(BUDGET);
    expect(over.status).toBe(429);
    expect(over.body.code).toBe('webhook_rate_limited');
    expect(over.text).toContain('for this connection');
    expect(Number(over.headers['retry-after'])).toBeGreaterThanOrEqual(1);

    // Another connection of the team has a budget of its own.
    const event = JSON.stringify({ type: 'event_callback', event_id: 'Ev0RATE', event: { type: 'app_mention' } });
    const at = Math.floor(Date.now() / 1000);
    const signature = createHmac('sha256', slackSecret).update(`v0:${at}:${event}`).digest('hex');
    const slack = await post(urls.slack!, event, {
      'content-type': 'application/json',
      'x-slack-request-timestamp': String(at),
      'x-slack-signature': `v0=${signature}`,
    });
    expect(slack.status, slack.text).toBe(202);
  });
});
