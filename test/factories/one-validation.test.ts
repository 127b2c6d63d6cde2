/**
 * A factory that declares `integrations` is validated once, with everything the apply knows: the model
 * catalogue and the deployment notes warn as they do for any factory, a closed catalogue refuses the revision,
 * and an apply that changes live webhooks reloads this process's routes of the factory once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEPLOYMENT_NOTES } from '../../src/factories/apply/deployment-notes.ts';
import { ENGINES } from '../support/db.ts';
import { startSlackStandIn } from '../support/chat-apis.ts';
import type { ChatApis } from '../support/chat-apis.ts';
import { FOREMAN, webhookYaml } from '../support/factory-tree.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { createGitFactory } from './support.ts';

function factoryYaml(integrations: boolean): string {
  return `schemaVersion: v1alpha1
name: Chat ops
repositories:
  - owner: acme
    name: web
${integrations ? 'integrations:\n  - type: slack\n' : ''}agentDefaults:
  model: auto-genuis
  runner: default
`;
}

const RUNNER_WITH_SETUP = `platform:
  os: linux
  linux:
    dockerImage: node:24-bookworm
setupCommands:
  - npm ci
`;

const SLACK_AUTOMATION = `---
triggers:
  - provider: slack
    event: reaction_added
    filter:
      channels: [eng]
      emojis: [eyes]
---

Look at the message that got the reaction.
`;

function tree(integrations: boolean): Record<string, string> {
  return {
    'factory.yaml': factoryYaml(integrations),
    'agents/foreman/agent.md': FOREMAN,
    'runners/default.yaml': RUNNER_WITH_SETUP,
    'webhooks/alerts.yaml': webhookYaml('alerts-token'),
    ...(integrations ? { 'automations/eyes/automation.md': SLACK_AUTOMATION } : {}),
  };
}

type Diag = { file: string; line: number; code: string; severity: string; message: string };
const described = (d: Diag) => `${d.file}:${d.line} ${d.severity} ${d.code}`;

async function connectSlack(server: TestServer): Promise<void> {
  for (const [name, value] of Object.entries({
    'alerts-token': 'alerts-token-value',
    'slack-signing': 'signing-secret-value',
    'slack-bot': 'xoxb-one-pass',
  }))
    expect((await server.api('PUT', `/secrets/${name}`, { value })).status).toBeLessThan(300);
  const connected = await server.api('PUT', '/integrations/slack', {
    signing_secret_name: 'slack-signing',
    bot_token_secret_name: 'slack-bot',
  });
  expect(connected.status, connected.text).toBe(200);
}

describe.each(ENGINES)('one validation per apply, with integrations, on %s', (engine) => {
  let apis: ChatApis;
  let open: TestServer;
  let closed: TestServer;
  beforeAll(async () => {
    apis = await startSlackStandIn('xoxb-one-pass', { channels: [{ id: 'C0ENG00001', name: 'eng' }] });
    process.env.AGENTYARD_SLACK_API_URL = apis.slackUrl;
    open = await startTestServer(engine);
    closed = await startTestServer(engine, { config: { modelCatalogue: 'closed' } });
    await connectSlack(open);
    await connectSlack(closed);
  }, 120_000);
  afterAll(async () => {
    await open?.close();
    await closed?.close();
    await apis?.close();
    delete process.env.AGENTYARD_SLACK_API_URL;
  });

  it('reports the same warnings with and without the integrations block', async () => {
    const warned: string[][] = [];
    for (const integrations of [false, true]) {
      const git = await createGitFactory(open, tree(integrations));
      const applied = await git.sync();
      expect(applied.status.state, JSON.stringify(applied.status.errors)).toBe('applied');
      // The status keeps the applied revision's warnings; its history entry holds the same.
      warned.push((applied.status.errors as Diag[]).map(described).sort());
      const entry = (await git.applies()).find((a: { result: string }) => a.result === 'applied');
      expect((entry.errors as Diag[]).map(described).sort()).toEqual(warned.at(-1));
    }
    expect(warned[0]).toEqual(
      ['factory.yaml:7 warning FF_INVALID_REFERENCE', 'runners/default.yaml:5 warning FF_NOT_SUPPORTED_HERE'].sort(),
    );
    expect(warned[1]).toEqual(
      ['factory.yaml:9 warning FF_INVALID_REFERENCE', 'runners/default.yaml:5 warning FF_NOT_SUPPORTED_HERE'].sort(),
    );
    const git = await createGitFactory(open, tree(true));
    const applied = await git.sync();
    const messages = (applied.status.errors as Diag[]).map((d) => d.message);
    expect(messages).toContain(DEPLOYMENT_NOTES.runnerSetupCommands);
    expect(messages.some((m) => /unknown model `auto-genuis`; did you mean `auto-genius`\?/.test(m))).toBe(true);
    // The names were resolved through the provider in the same pass.
    const rows = await open.server.ctx.db.query<{ filter: Record<string, unknown> }>(
      'SELECT filter FROM automation_provider_triggers WHERE factory_id = $1',
      [git.id],
    );
    expect(rows.rows).toEqual([{ filter: { channel_ids: { in: ['C0ENG00001'] }, emojis: { in: ['eyes'] } } }]);
  }, 120_000);

  it('a closed catalogue refuses the revision of a factory with integrations', async () => {
    const git = await createGitFactory(closed, tree(true));
    const refused = await git.sync();
    expect(refused.status.state).toBe('failed');
    expect(refused.status.applied_revision ?? null).toBeNull();
    const errors = (refused.status.errors as Diag[]).filter((d) => d.severity === 'error').map(described);
    expect(errors).toEqual(['factory.yaml:9 error FF_INVALID_REFERENCE']);
  });

  it("an apply that changes live webhooks reloads this process's routes of the factory once", async () => {
    const routing = open.server.services.routing!;
    const reloads: string[] = [];
    const reload = routing.reloadFactory.bind(routing);
    routing.reloadFactory = (id: string) => {
      reloads.push(id);
      return reload(id);
    };
    try {
      const git = await createGitFactory(open, tree(true));
      const applied = await git.sync();
      expect(applied.status.state).toBe('applied');
      const [hook] = await git.webhooks();
      // In force when the sync answers.
      expect(routing.get(hook.uid)).toBeDefined();
      expect(reloads.filter((id) => id === git.id)).toEqual([git.id]);
    } finally {
      routing.reloadFactory = reload;
    }
  });
});
