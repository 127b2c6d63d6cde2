/**
 * A server whose agents are the MCP stand-in (test/fixtures/agents/mcp-agent.mjs) on the `command` harness: it
 * speaks to the factory interface through the real MCP client SDK, following a playbook per agent.
 */
import { createHmac } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import path from 'node:path';
import { AGENTS, eventsOf, fastSettings, ROOT, waitForState, whenRunsTold } from '../execution/support.ts';
import { issueRunTokens } from '../../src/execution/run-token.ts';
import { post } from '../ingress/support.ts';
import { SLACK_APP_MENTION } from '../integrations/fixtures.ts';
import { providerFactoryYaml } from '../support/factory-tree.ts';
import type { Engine } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer, TestServerOptions } from '../support/server.ts';

export const MCP_AGENT = path.join(AGENTS, 'mcp-agent.mjs');
const NODE_MODULES = realpathSync(path.join(ROOT, 'node_modules'));
export const SDK_DIR = path.join(NODE_MODULES, '@modelcontextprotocol/sdk');

/** A step of the stand-in's playbook (see mcp-agent.mjs). */
export type PlaybookStep =
  | { call: string; args?: Record<string, unknown>; save?: string; expectError?: boolean }
  | { result: string }
  | { fail: string }
  | { sleep: number }
  | { echo_token: true };

/** Agent name → attempt ("1", "2"…, or "default") → steps. */
export type Playbook = Record<string, Record<string, PlaybookStep[]>>;

/** Sets the playbook the stand-in agents of this test file follow (read by the executor when an agent starts). */
export function usePlaybook(playbook: Playbook): void {
  process.env.MCP_PLAYBOOK = JSON.stringify(playbook);
  process.env.MCP_SDK_DIR = SDK_DIR;
}

export async function startMcpServer(
  engine: Engine,
  options: { config?: TestServerOptions['config']; limits?: Record<string, number> } = {},
): Promise<TestServer> {
  return startTestServer(engine, {
    compose: {
      execution: {
        // the sandbox shows the SDK's node_modules read-only, as an installation's tools would be
        env: { AGENTYARD_SANDBOX_READ_ONLY_PATHS: NODE_MODULES },
        settings: fastSettings({
          harnesses: ['command', 'claude', 'codex', 'gemini'],
          defaultHarness: 'command',
          bins: { ...fastSettings().bins!, command: MCP_AGENT },
          passEnv: ['MCP_PLAYBOOK', 'MCP_SDK_DIR'],
        }),
      },
      ...(options.limits ? { orchestration: { limits: options.limits } } : {}),
    },
    ...(options.config ? { config: options.config } : {}),
  });
}

/** An MCP client of the factory interface, as a person's own client or an agent would connect. */
export async function mcpClient(s: TestServer, bearer: string): Promise<Client> {
  const client = new Client({ name: 'test-client', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${s.apiUrl}/mcp/factory`), {
      requestInit: { headers: { Authorization: `Bearer ${bearer}` } },
    }),
  );
  return client;
}

/** A tool's answer: its structured content, or its refusal text. */
export async function callTool(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<{ isError: boolean; data: any; text: string }> {
  const answer = (await client.callTool({ name, arguments: args })) as {
    isError?: boolean;
    structuredContent?: unknown;
    content?: { type: string; text?: string }[];
  };
  const text = (answer.content ?? []).map((c) => c.text ?? '').join('\n');
  return { isError: answer.isError === true, data: answer.structuredContent, text };
}

/** Applies `files` to a new managed factory; answers its id. */
export async function managedFactory(s: TestServer, name: string, files: Record<string, string>): Promise<string> {
  const factory = await s.api('POST', '/factories', { name, source: { type: 'managed' } });
  if (factory.status !== 201) throw new Error(`create factory: ${factory.status} ${factory.text}`);
  const applied = await s.api('POST', `/factories/${factory.body.id}/apply`, {
    files: Object.entries(files).map(([p, content]) => ({ path: p, content })),
    message: 'test factory',
  });
  if (applied.status !== 200) throw new Error(`apply: ${applied.status} ${applied.text}`);
  return factory.body.id as string;
}

export const AGENT_FILES = {
  'agents/foreman/agent.md': `---
agentType: FOREMAN
description: The orchestrator of the software factory.
---

You are the foreman: you delegate to subagents.
`,
  'agents/implement/agent.md': `---
description: Implements a change and opens a pull request.
---

You implement what the brief asks.
`,
  'runners/default.yaml': `platform:
  os: linux
  linux:
    dockerImage: node:24-bookworm
`,
  'skills/triage/SKILL.md': `---
name: triage
description: How this factory triages.
---

Label it, then hand it to implement.
`,
};

/**
 * A factory whose foreman a Slack `app_mention` starts: the agent files, `factory.yaml` (named `name`, with the
 * Slack integration) and the `mention` automation (its runs are named `mention`).
 */
export function slackForemanFiles(name: string): Record<string, string> {
  return {
    ...AGENT_FILES,
    'factory.yaml': providerFactoryYaml(name, ['slack']),
    'automations/mention/automation.md': `---
triggers:
  - provider: slack
    event: app_mention
---

Handle the request from Slack.
`,
  };
}

/** Connects Slack to the team of `s` (its signing secret and bot token stored as secrets); answers the events URL. */
export async function connectSlack(s: TestServer, signingSecret: string, botToken: string): Promise<string> {
  for (const [name, value] of Object.entries({ 'slack-signing': signingSecret, 'slack-bot': botToken })) {
    const put = await s.api('PUT', `/secrets/${name}`, { value });
    if (put.status >= 300) throw new Error(`PUT /secrets/${name}: ${put.status} ${put.text}`);
  }
  const slack = await s.api('PUT', '/integrations/slack', {
    signing_secret_name: 'slack-signing',
    bot_token_secret_name: 'slack-bot',
  });
  if (slack.status !== 200) throw new Error(`PUT /integrations/slack: ${slack.status} ${slack.text}`);
  return slack.body.events_url as string;
}

/** Posts a Slack event (the shape of SLACK_APP_MENTION around `event`) to `url`, signed with `signingSecret`. */
export function postSlackEvent(url: string, signingSecret: string, event: Record<string, unknown>, eventId: string) {
  const body = JSON.stringify({ ...SLACK_APP_MENTION, event, event_id: eventId });
  const at = Math.floor(Date.now() / 1000);
  const signature = createHmac('sha256', signingSecret).update(`v0:${at}:${body}`).digest('hex');
  return post(url, body, {
    'content-type': 'application/json',
    'x-slack-request-timestamp': String(at),
    'x-slack-signature': `v0=${signature}`,
  });
}

/**
 * Starts a run of the factory whose agent sleeps (`PLAYBOOK=hold`) and, once its agent has connected, takes its
 * execution's token over (issuing another replaces the agent's): the test then speaks for the parent.
 */
export async function heldParentToken(s: TestServer, factoryId: string): Promise<{ parentId: string; token: string }> {
  const created = await s.api('POST', `/factories/${factoryId}/runs`, { prompt: 'PLAYBOOK=hold' });
  if (created.status !== 200) throw new Error(`create the parent: ${created.status} ${created.text}`);
  const parentId = created.body.run_id as string;
  await waitForState(s, parentId, ['INPROGRESS'], 60_000);
  await whenRunsTold(s, 'the parent agent to connect', async () =>
    (await eventsOf(s, parentId)).some((e) => e.type === 'status' && /^factory tools/.test(e.data.message ?? '')),
  );
  const parent = (
    await s.server.ctx.db.query<{ execution_id: string; team_id: string }>(
      'SELECT execution_id, team_id FROM runs WHERE id = $1',
      [parentId],
    )
  ).rows[0]!;
  const tokens = await issueRunTokens(s.server.ctx.db, [
    { executionId: parent.execution_id, runId: parentId, teamId: parent.team_id },
  ]);
  return { parentId, token: tokens.get(parent.execution_id)! };
}
