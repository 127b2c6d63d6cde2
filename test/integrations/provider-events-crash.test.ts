/**
 * Provider events survive `kill -9`: a real `agentyard serve` process takes a stream of signed GitHub and Slack
 * events and is killed with SIGKILL mid-stream; a new process takes the unanswered ones again (as the providers
 * redeliver) and every answered one once more (a redelivery of the same `X-GitHub-Delivery`, a Slack retry of
 * the same `event_id`). Every event then has exactly one run: none lost, none twice.
 */
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import examples from '@octokit/webhooks-examples/api.github.com/index.json' with { type: 'json' };
import { sign } from '@octokit/webhooks-methods';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CompositionOptions } from '../../src/composition.ts';
import { DELIVERIES_EVALUATED_TOPIC } from '../../src/kernel/topics.ts';
import { whenTold } from '../support/signals.ts';
import { createGitFactory } from '../factories/support.ts';
import { post } from '../ingress/support.ts';
import { serveEnv, spawnAgentyard } from '../support/agentyard-process.ts';
import type { AgentyardProcess } from '../support/agentyard-process.ts';
import { ENGINES } from '../support/db.ts';
import { FOREMAN, RUNNER } from '../support/factory-tree.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { SLACK_APP_MENTION } from './fixtures.ts';

/** This process only sets things up: the spawned servers alone take and evaluate the events. */
const WITHOUT_EVALUATOR: CompositionOptions = { automations: false };

const EVENTS = 240;

const FACTORY = `schemaVersion: v1alpha1
name: Crash
repositories:
  - owner: Codertocat
    name: Hello-World
integrations:
  - type: slack
agentDefaults:
  model: auto
  runner: default
`;

const ISSUE_LABELED = `---
triggers:
  - provider: github
    event: issue_labeled
    filter:
      labels: [bug]
---

Triage the labelled issue.
`;

const SLACK_MENTION = `---
triggers:
  - provider: slack
    event: app_mention
---

Answer the mention.
`;

function issueLabeled(n: number): Record<string, any> {
  const entry = (examples as { name: string; examples: Record<string, any>[] }[]).find((e) => e.name === 'issues')!;
  const payload = structuredClone(entry.examples.find((x) => x.action === 'labeled')!);
  payload.issue.number = n;
  payload.label.name = 'bug';
  return payload;
}

interface ProviderEvent {
  /** X-GitHub-Delivery or Slack's event_id. */
  identity: string;
  path: string;
  /** Body and headers, signed at the moment of sending (Slack's signature holds the time). */
  request(retry: boolean): Promise<{ body: string; headers: Record<string, string> }>;
}

describe.runIf(ENGINES.includes('postgres'))('provider events across kill -9 on PostgreSQL', () => {
  let setup: TestServer;
  const githubSecret = randomBytes(20).toString('hex');
  const slackSecret = randomBytes(16).toString('hex');
  const paths: Record<string, string> = {};
  const spawned: AgentyardProcess[] = [];

  beforeAll(async () => {
    setup = await startTestServer('postgres', { compose: WITHOUT_EVALUATOR });
    for (const [name, value] of Object.entries({
      'gh-hook': githubSecret,
      'slack-signing': slackSecret,
      'slack-bot': 'xoxb-test',
    }))
      expect((await setup.api('PUT', `/secrets/${name}`, { value })).status).toBeLessThan(300);
    for (const [provider, body] of Object.entries({
      github: { mode: 'webhook', webhook_secret_name: 'gh-hook' },
      slack: { signing_secret_name: 'slack-signing', bot_token_secret_name: 'slack-bot' },
    })) {
      const res = await setup.api('PUT', `/integrations/${provider}`, body);
      expect(res.status, res.text).toBe(200);
      paths[provider] = new URL(res.body.events_url).pathname;
    }
  });
  afterAll(async () => {
    for (const p of spawned) await p.stop();
    await setup?.close();
  });

  async function serve(): Promise<{ process: AgentyardProcess; url: string }> {
    const process = spawnAgentyard(
      ['serve', '--roles', 'ingress', '--port', '0', '--host', '127.0.0.1'],
      serveEnv(setup.database, { LOG_LEVEL: 'info' }),
    );
    spawned.push(process);
    const url = (await process.printed(/listening on (http:\/\/[\d.:]+)/, 'the server to listen', 120_000))[1]!;
    return { process, url };
  }

  function events(): ProviderEvent[] {
    return Array.from({ length: EVENTS }, (_, i): ProviderEvent => {
      if (i % 2 === 0) {
        const identity = randomUUID();
        const body = JSON.stringify(issueLabeled(1000 + i));
        return {
          identity,
          path: paths.github!,
          async request() {
            return {
              body,
              headers: {
                'content-type': 'application/json',
                'x-github-event': 'issues',
                'x-github-delivery': identity,
                'x-hub-signature-256': await sign(githubSecret, body),
              },
            };
          },
        };
      }
      const identity = `Ev${randomBytes(6).toString('hex').toUpperCase()}`;
      const body = JSON.stringify({ ...SLACK_APP_MENTION, event_id: identity });
      return {
        identity,
        path: paths.slack!,
        async request(retry) {
          const at = Math.floor(Date.now() / 1000);
          const signature = createHmac('sha256', slackSecret).update(`v0:${at}:${body}`).digest('hex');
          return {
            body,
            headers: {
              'content-type': 'application/json',
              'x-slack-request-timestamp': String(at),
              'x-slack-signature': `v0=${signature}`,
              ...(retry ? { 'x-slack-retry-num': '1', 'x-slack-retry-reason': 'http_error' } : {}),
            },
          };
        },
      };
    });
  }

  /** Sends each event once, 8 at a time; true for each the server acknowledged (2xx). */
  async function sendAll(
    url: string,
    list: ProviderEvent[],
    retry: boolean,
    onAcknowledged: (count: number) => void = () => {},
  ): Promise<Map<string, boolean>> {
    const answered = new Map<string, boolean>();
    let acknowledged = 0;
    let next = 0;
    const lane = async () => {
      while (next < list.length) {
        const event = list[next++]!;
        const { body, headers } = await event.request(retry);
        try {
          const res = await post(`${url}${event.path}`, body, headers);
          const ok = res.status >= 200 && res.status < 300;
          answered.set(event.identity, ok);
          if (ok) onAcknowledged(++acknowledged);
        } catch {
          answered.set(event.identity, false);
        }
      }
    };
    await Promise.all(Array.from({ length: 8 }, lane));
    return answered;
  }

  async function runsPerEvent(): Promise<Map<string, number>> {
    const res = await setup.server.ctx.db.query<{ identity: string; runs: number }>(
      `SELECT d.sender_delivery_id AS identity, count(*)::int AS runs
         FROM runs r JOIN webhook_deliveries d ON d.id = r.delivery_id
        WHERE d.provider IS NOT NULL
        GROUP BY d.sender_delivery_id`,
    );
    return new Map(res.rows.map((r) => [r.identity, r.runs]));
  }

  it('applies a factory with a GitHub and a Slack automation', async () => {
    const git = await createGitFactory(setup, {
      'factory.yaml': FACTORY,
      'agents/foreman/agent.md': FOREMAN,
      'runners/default.yaml': RUNNER,
      'automations/triage/automation.md': ISSUE_LABELED,
      'automations/mention/automation.md': SLACK_MENTION,
    });
    expect((await git.sync()).status.state).toBe('applied');
  });

  it('a server killed with SIGKILL mid-stream: after redeliveries, each event has exactly one run', async () => {
    const stream = events();
    const first = await serve();
    // Killed when a third of the stream is acknowledged, with requests in flight and the outbox behind.
    const answered = await sendAll(first.url, stream, false, (count) => {
      if (count === EVENTS / 3) first.process.child.kill('SIGKILL');
    });
    await first.process.exited;
    expect(first.process.child.signalCode).toBe('SIGKILL');
    const acknowledged = stream.filter((e) => answered.get(e.identity));
    expect(acknowledged.length).toBeGreaterThanOrEqual(EVENTS / 3);
    expect(acknowledged.length).toBeLessThan(EVENTS);

    const second = await serve();
    // The providers redeliver what went unanswered; an answered event may come again all the same.
    const again = await sendAll(second.url, stream, true);
    expect(stream.filter((e) => !again.get(e.identity))).toEqual([]);

    // the serve processes' evaluators tell their batches over LISTEN/NOTIFY
    await whenTold(
      setup.server.ctx.bus,
      [DELIVERIES_EVALUATED_TOPIC],
      async () => {
        const res = await setup.server.ctx.db.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM webhook_deliveries WHERE outbox_pending',
        );
        return res.rows[0]!.n === 0 ? true : undefined;
      },
      { what: 'every delivery evaluated', timeoutMs: 60_000 },
    );
    const runs = await runsPerEvent();
    expect(stream.filter((e) => runs.get(e.identity) !== 1).map((e) => [e.identity, runs.get(e.identity)])).toEqual([]);
    expect(runs.size).toBe(EVENTS);
  }, 240_000);
});
