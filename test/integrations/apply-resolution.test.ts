/**
 * Apply-time resolution of integrations: a declared integration must be connected, and Slack/Linear name
 * aliases resolve to IDs through @slack/web-api and @linear/sdk (local stand-ins of their APIs); an unknown
 * name fails the apply at its file:line while the last good revision keeps serving.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { FOREMAN, RUNNER } from '../support/factory-tree.ts';
import { createGitFactory } from '../factories/support.ts';
import { startChatApis } from '../support/chat-apis.ts';
import type { ChatApis } from '../support/chat-apis.ts';

const TEAM_ID = '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d';

function factoryYaml(integrations: string[]): string {
  return `schemaVersion: v1alpha1
name: Chat ops
repositories:
  - owner: acme
    name: web
integrations:
${integrations.map((t) => `  - type: ${t}`).join('\n')}
agentDefaults:
  model: auto
  runner: default
`;
}

function reactions(channel: string): string {
  return `---
triggers:
  - provider: slack
    event: reaction_added
    filter:
      channels: [${channel}]
      emojis: [eyes]
  - provider: linear
    event: issue_created
    filter:
      teams: [Engineering]
---

Look at the message that got the reaction.
`;
}

describe.each(ENGINES)('apply-time integration resolution on %s', (engine) => {
  let server: TestServer;
  let apis: ChatApis;
  beforeAll(async () => {
    apis = await startChatApis({
      slackToken: 'xoxb-resolver',
      channels: [
        { id: 'C0ENG00001', name: 'eng' },
        { id: 'C0RAND0002', name: 'random' },
      ],
      users: [{ id: 'U0ADA00001', name: 'ada', real_name: 'Ada Lovelace' }],
      linearKey: 'lin_api_resolver',
      teams: [{ id: TEAM_ID, name: 'Engineering', key: 'ENG' }],
      projects: [],
      states: [],
      issues: [],
    });
    process.env.AGENTYARD_SLACK_API_URL = apis.slackUrl;
    process.env.AGENTYARD_LINEAR_API_URL = apis.linearUrl;
    server = await startTestServer(engine);
  });
  afterAll(async () => {
    await server?.close();
    await apis?.close();
    delete process.env.AGENTYARD_SLACK_API_URL;
    delete process.env.AGENTYARD_LINEAR_API_URL;
  });

  it('fails without the connections, resolves names once connected, and keeps the last good revision on an unknown name', async () => {
    const git = await createGitFactory(server, {
      'factory.yaml': factoryYaml(['slack', 'linear']),
      'agents/foreman/agent.md': FOREMAN,
      'runners/default.yaml': RUNNER,
      'automations/eyes/automation.md': reactions('eng'),
    });
    const first = await git.sync();
    expect(first.status.state).toBe('failed');
    const messages = (first.errors as { file: string; line: number; code: string; message: string }[]).map(
      (e) => `${e.file}:${e.line} ${e.code} ${e.message}`,
    );
    expect(messages).toContain(
      'factory.yaml:7 FF_INVALID_REFERENCE the team has not connected slack; connect it with PUT /api/v1/integrations/slack',
    );
    expect(
      messages.some((m) => m.startsWith('factory.yaml:8 FF_INVALID_REFERENCE the team has not connected linear')),
    ).toBe(true);

    for (const [name, value] of Object.entries({
      'slack-signing': 'signing-secret-value',
      'slack-bot': 'xoxb-resolver',
      'linear-hook': 'lin_wh_resolver',
      'linear-key': 'lin_api_resolver',
    }))
      expect((await server.api('PUT', `/secrets/${name}`, { value })).status).toBeLessThan(300);
    expect(
      (
        await server.api('PUT', '/integrations/slack', {
          signing_secret_name: 'slack-signing',
          bot_token_secret_name: 'slack-bot',
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await server.api('PUT', '/integrations/linear', {
          webhook_secret_name: 'linear-hook',
          api_key_secret_name: 'linear-key',
        })
      ).status,
    ).toBe(200);

    await git.commit({ 'automations/eyes/automation.md': reactions('"#eng"') }, 'retry after connecting');
    const applied = await git.sync();
    expect(applied.status.state, JSON.stringify(applied.errors)).toBe('applied');
    const rows = await server.server.ctx.db.query<{ provider: string; filter: Record<string, unknown> }>(
      'SELECT provider, filter FROM automation_provider_triggers WHERE factory_id = $1 ORDER BY provider',
      [git.id],
    );
    expect(rows.rows).toEqual([
      { provider: 'linear', filter: { team_ids: { in: [TEAM_ID] } } },
      { provider: 'slack', filter: { channel_ids: { in: ['C0ENG00001'] }, emojis: { in: ['eyes'] } } },
    ]);
    expect(apis.calls).toEqual(expect.arrayContaining(['slack conversations.list', 'linear teams']));

    const revision = applied.status.applied_revision;
    await git.commit(
      { 'automations/eyes/automation.md': reactions('no-such-channel') },
      'a channel that does not exist',
    );
    const refused = await git.sync();
    expect(refused.status.applied_revision).toBe(revision);
    const refusal = (refused.errors as { file: string; line: number; code: string; message: string }[]).map(
      (e) => `${e.file}:${e.line} ${e.code} ${e.message}`,
    );
    expect(refusal).toEqual([
      'automations/eyes/automation.md:6 FF_INVALID_REFERENCE slack knows no channels entry named `no-such-channel`',
    ]);
  });
});
