/**
 * End to end with an executor: a managed factory whose automation triggers on github/issue_labeled, a GitHub
 * App connection, a delivery signed by @octokit/webhooks-methods → exactly one run, executed by the `command`
 * harness on a fake agent, whose workspace holds event-payload.json and whose environment holds GH_TOKEN and
 * GITHUB_TOKEN minted by @octokit/auth-app from a local stand-in of GitHub's API; the Slack bot token only when
 * the factory's secrets ask for it, not for declaring the integration (the factory interface posts with it).
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import examples from '@octokit/webhooks-examples/api.github.com/index.json' with { type: 'json' };
import { sign } from '@octokit/webhooks-methods';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { FOREMAN, RUNNER } from '../support/factory-tree.ts';
import { startGithubApi } from '../support/github-api.ts';
import type { GithubApiStandIn } from '../support/github-api.ts';
import { post } from '../ingress/support.ts';
import { executionsOf, FAKE, fakeRecords, startExecServer, waitForState } from '../execution/support.ts';
import { waitForCreatedRun } from '../support/run-events.ts';
import type { ExecServer } from '../execution/support.ts';

const { privateKey, publicKey } = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  publicKeyEncoding: { type: 'spki', format: 'pem' },
});

const factoryYaml = (secrets = '') => `schemaVersion: v1alpha1
name: Issue triage
repositories:
  - owner: Codertocat
    name: Hello-World
integrations:
  - type: slack
${secrets}agentDefaults:
  model: auto
  runner: default
`;

const FILES = {
  'factory.yaml': factoryYaml(),
  'agents/foreman/agent.md': FOREMAN,
  'runners/default.yaml': RUNNER,
  'automations/triage/automation.md': `---
triggers:
  - provider: github
    event: issue_labeled
    filter:
      labels: [bug]
---

Triage the labelled issue. LIST_FILES
`,
};

function labeledIssue(): Record<string, any> {
  const entry = (examples as { name: string; examples: Record<string, any>[] }[]).find((e) => e.name === 'issues')!;
  const payload = structuredClone(entry.examples.find((x) => x.action === 'labeled')!);
  // As an App's delivery carries it.
  payload.installation = { id: 4242001, node_id: 'MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uNDI0MjAwMQ==' };
  return payload;
}

describe.each(ENGINES)('a GitHub App event to a finished run on %s', (engine) => {
  let s: ExecServer;
  let eventsUrl: string;
  let github: GithubApiStandIn;
  const webhookSecret = randomBytes(20).toString('hex');
  beforeAll(async () => {
    github = await startGithubApi(publicKey);
    process.env.AGENTYARD_GITHUB_API_URL = github.url;
    s = await startExecServer(engine, {
      settings: { harnesses: ['command'], defaultHarness: 'command', bins: { ...FAKE } },
    });
  });
  afterAll(async () => {
    await s?.close();
    await github?.close();
    delete process.env.AGENTYARD_GITHUB_API_URL;
  });

  it('runs once with event-payload.json in the workspace and a repository-scoped token in the environment', async () => {
    for (const [name, value] of Object.entries({
      'gh-app-key': privateKey,
      'gh-app-hook': webhookSecret,
      'slack-signing': 'slack-signing-secret',
      'slack-bot': 'xoxb-1234567890-abcdef',
    }))
      expect((await s.api('PUT', `/secrets/${name}`, { value })).status).toBeLessThan(300);
    const slack = { signing_secret_name: 'slack-signing', bot_token_secret_name: 'slack-bot' };
    expect((await s.api('PUT', '/integrations/slack', slack)).status).toBe(200);
    const connection = await s.api('PUT', '/integrations/github', {
      mode: 'app',
      app_id: '4242',
      private_key_secret_name: 'gh-app-key',
      webhook_secret_name: 'gh-app-hook',
    });
    expect(connection.status, connection.text).toBe(200);
    eventsUrl = connection.body.events_url;
    const factory = await s.api('POST', '/factories', { name: 'triage', source: { type: 'managed' } });
    expect(factory.status, factory.text).toBe(201);
    const applied = await s.api('POST', `/factories/${factory.body.id}/apply`, {
      files: Object.entries(FILES).map(([p, content]) => ({ path: p, content })),
      message: 'github automation',
    });
    expect(applied.status, applied.text).toBe(200);

    const body = JSON.stringify(labeledIssue());
    const headers = {
      'content-type': 'application/json',
      'x-github-event': 'issues',
      'x-github-delivery': '0b5e2f9a-7c1d-4e8b-9a3f-000000000042',
      'x-hub-signature-256': await sign(webhookSecret, body),
    };
    const delivered = await post(connection.body.events_url, body, headers);
    expect(delivered.status, delivered.text).toBe(202);
    const deliveryId = delivered.body.delivery_id as string;
    const runId = await waitForCreatedRun(s.server.ctx.bus, async () => {
      const res = await s.server.ctx.db.query<{ id: string }>('SELECT id FROM runs WHERE delivery_id = $1', [
        deliveryId,
      ]);
      return res.rows[0]?.id;
    });
    const run = await waitForState(s, runId, ['SUCCEEDED', 'FAILED', 'ERROR']);
    expect(run.state, JSON.stringify(run.status_message)).toBe('SUCCEEDED');
    expect(run.source).toBe('GITHUB_ACTION');
    const [execution] = await executionsOf(s, runId);
    const record = fakeRecords(execution!.workspace!)[0];
    expect(record.files).toContain('event-payload.json');
    expect(readFileSync(path.join(execution!.workspace!, 'event-payload.json'), 'utf8')).toBe(body);
    // The fake agent records token variables by length only.
    expect(record.env.GH_TOKEN).toMatch(/^<\d+ chars>$/);
    expect(record.env.GITHUB_TOKEN).toBe(record.env.GH_TOKEN);
    // The factory declares slack but does not ask for its token: the agent posts through the factory interface.
    expect(record.env.SLACK_BOT_TOKEN).toBeUndefined();
    expect(record.env.LINEAR_API_KEY).toBeUndefined();
    expect(JSON.stringify(record.argv)).not.toContain('ghs_');
    expect(github.tokenRequests).toEqual([{ installationId: '4242001', appId: '4242', repositories: ['Hello-World'] }]);
    const events = JSON.stringify((await s.api('GET', `/agent/runs/${runId}/conversation`)).body);
    expect(events).not.toContain('ghs_standin');

    // The same delivery again starts nothing.
    const again = await post(connection.body.events_url, body, headers);
    expect(again.status).toBe(202);
    const runs = await s.server.ctx.db.query('SELECT id FROM runs WHERE delivery_id = ANY($1::text[])', [
      [deliveryId, again.body.delivery_id],
    ]);
    expect(runs.rows).toHaveLength(1);
  });

  it('lends the bot token as SLACK_BOT_TOKEN when the factory names its secret in `secrets`', async () => {
    const factory = (await s.api('GET', '/factories')).body.factories[0];
    const applied = await s.api('POST', `/factories/${factory.id}/apply`, {
      files: Object.entries({ ...FILES, 'factory.yaml': factoryYaml('secrets:\n  - slack-bot\n') }).map(
        ([p, content]) => ({ path: p, content }),
      ),
      message: 'ask for the bot token',
    });
    expect(applied.status, applied.text).toBe(200);
    const body = JSON.stringify(labeledIssue());
    const delivered = await post(eventsUrl, body, {
      'content-type': 'application/json',
      'x-github-event': 'issues',
      'x-github-delivery': '0b5e2f9a-7c1d-4e8b-9a3f-000000000043',
      'x-hub-signature-256': await sign(webhookSecret, body),
    });
    expect(delivered.status, delivered.text).toBe(202);
    const runId = await waitForCreatedRun(s.server.ctx.bus, async () => {
      const res = await s.server.ctx.db.query<{ id: string }>('SELECT id FROM runs WHERE delivery_id = $1', [
        delivered.body.delivery_id,
      ]);
      return res.rows[0]?.id;
    });
    const run = await waitForState(s, runId, ['SUCCEEDED', 'FAILED', 'ERROR']);
    expect(run.state, JSON.stringify(run.status_message)).toBe('SUCCEEDED');
    const [execution] = await executionsOf(s, runId);
    const record = fakeRecords(execution!.workspace!)[0];
    expect(record.env.SLACK_BOT_TOKEN).toBe(`<${'xoxb-1234567890-abcdef'.length} chars>`);
    expect(record.env.LINEAR_API_KEY).toBeUndefined();
    const events = JSON.stringify((await s.api('GET', `/agent/runs/${runId}/conversation`)).body);
    expect(events).not.toContain('xoxb-1234567890-abcdef');
  });
});
