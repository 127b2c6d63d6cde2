/**
 * The factory interface (/api/v1/mcp/factory) through the real MCP client SDK: what a team's API key may do; the
 * run token (valid only while its execution runs, bound to its team and its tree, redacted everywhere, found only
 * in the MCP configuration); the limits (depth, children, active runs per factory, the tree deadline) as tool
 * errors; a cancel that reaches the descendants; skills.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cancelOverdue } from '../../src/runs/tree.ts';
import { ENGINES } from '../support/db.ts';
import type { TestServer } from '../support/server.ts';
import { eventsOf, executionsOf, liveWorkspace, waitForState, whenRunsTold } from '../execution/support.ts';
import { waitForCreatedRun } from '../support/run-events.ts';
import { AGENT_FILES, callTool, managedFactory, mcpClient, startMcpServer, usePlaybook } from './support.ts';
import type { Playbook } from './support.ts';

const FILES = {
  ...AGENT_FILES,
  'factory.yaml': `schemaVersion: v1alpha1
name: Interface
repositories:
  - owner: acme
    name: api
agentDefaults:
  model: auto
  runner: default
`,
};

const LIMITS = { maxDepth: 1, maxChildren: 2, maxActivePerFactory: 4, maxTreeMinutes: 60 };

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    return statSync(full).isDirectory() ? filesUnder(full) : [full];
  });
}

async function runIdOfDispatch(s: TestServer, args: Record<string, unknown>): Promise<string> {
  const client = await mcpClient(s, s.adminKey);
  try {
    const answer = await callTool(client, 'dispatch_agent', { factory: 'interface', ...args });
    if (answer.isError) throw new Error(answer.text);
    return answer.data.run_id as string;
  } finally {
    await client.close();
  }
}

describe.each(ENGINES)('the factory interface on %s', (engine) => {
  let s: TestServer;
  let factoryId: string;
  let otherTeamRun: string;
  let unrelatedRun: string;
  const playbook: Playbook = {};

  beforeAll(async () => {
    s = await startMcpServer(engine, { limits: LIMITS });
    factoryId = await managedFactory(s, 'interface', FILES);
    const teamB = (await s.api('POST', '/teams', { name: 'team-b' })).body.team.id as string;
    const { run: other } = await s.server.services.runs.create({
      teamId: teamB,
      prompt: 'PLAYBOOK=none',
      source: 'API',
      creator: null,
    });
    otherTeamRun = other.id;
    unrelatedRun = (await s.api('POST', '/agent/runs', { prompt: 'PLAYBOOK=none unrelated' })).body.run_id;
    usePlaybook(playbook);
  });
  afterAll(async () => {
    await s?.close();
  });

  it("answers a team's API key with the schema and validate tools, list_agents, dispatch_agent and read_skill", async () => {
    const client = await mcpClient(s, s.adminKey);
    try {
      const tools = (await client.listTools()).tools.map((t) => t.name).sort();
      expect(tools).toEqual([
        'dispatch_agent',
        'get_factory_file_schema',
        'list_agents',
        'read_skill',
        'validate_factory_files',
      ]);
      const agents = await callTool(client, 'list_agents', { factory: 'interface' });
      expect(agents.isError, agents.text).toBe(false);
      expect(agents.data.agents).toEqual([
        { name: 'foreman', description: 'The orchestrator of the software factory.', type: 'FOREMAN' },
        { name: 'implement', description: 'Implements a change and opens a pull request.', type: expect.any(String) },
      ]);
      const unknown = await callTool(client, 'dispatch_agent', { factory: 'interface', agent: 'nobody', prompt: 'x' });
      expect(unknown.isError).toBe(true);
      expect(unknown.text).toContain('no agent "nobody"; its agents: foreman, implement');
      const elsewhere = await callTool(client, 'list_agents', { factory: 'no-such-factory' });
      expect(elsewhere).toMatchObject({ isError: true, text: 'the team has no factory "no-such-factory"' });
      // a run-only tool is not offered to a key, and calling it is a protocol error
      await expect(client.callTool({ name: 'report', arguments: { text: 'x' } })).resolves.toMatchObject({
        isError: true,
      });

      const schema = await callTool(client, 'get_factory_file_schema', { document: 'agent' });
      expect(Object.keys(schema.data.documents)).toEqual(['agent.schema.json']);
      const invalid = await callTool(client, 'validate_factory_files', {
        files: [{ path: 'factory.yaml', content: 'schemaVersion: v1alpha1\nname: 12\nbogus: true\n' }],
      });
      expect(invalid.isError, invalid.text).toBe(false);
      expect(invalid.data.valid).toBe(false);
      expect(invalid.data.diagnostics.length).toBeGreaterThan(0);
      expect(invalid.data.diagnostics[0]).toMatchObject({ path: 'factory.yaml', severity: 'error' });

      const bundled = await callTool(client, 'read_skill', { skill: 'factory-mcp' });
      expect(bundled.data).toMatchObject({ skill: 'factory-mcp', source: 'bundled: factory-mcp' });
      expect(bundled.data.text).toContain('dispatch_agent');
      const own = await callTool(client, 'read_skill', { skill: 'repo:triage' });
      expect(own.data).toMatchObject({ skill: 'triage', source: 'factory interface: skills/triage/SKILL.md' });
      expect((await callTool(client, 'read_skill', { skill: 'nope' })).isError).toBe(true);
    } finally {
      await client.close();
    }
    const listed = await s.api('GET', '/agent/skills');
    expect(listed.status).toBe(200);
    const ids = listed.body.skills.map((k: { id: string }) => k.id);
    expect(ids).toEqual(
      expect.arrayContaining([
        'factory-files',
        'factory-mcp',
        'agentyard-platform',
        'pr-comments',
        'create-skill',
        'add-mcp-server',
        'interface:skills/triage/SKILL.md',
      ]),
    );
  });

  it('refuses a missing, unknown or ended credential with 401', async () => {
    for (const auth of [undefined, 'Bearer ayrt_not-a-token-of-any-execution-0000000000', 'Bearer ayk_nope']) {
      const res = await fetch(`${s.apiUrl}/mcp/factory`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...(auth ? { authorization: auth } : {}),
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toContain('Bearer');
    }
    expect((await fetch(`${s.apiUrl}/mcp/factory`, { method: 'GET' })).status).toBe(405);
  });

  it('binds a run token to its team and tree, enforces the limits as tool errors, and redacts the token', async () => {
    playbook.rooted = {
      default: [
        { echo_token: true },
        { call: 'get_run', args: { run_id: otherTeamRun }, expectError: true },
        { call: 'get_run', args: { run_id: unrelatedRun }, expectError: true },
        { call: 'report', args: { text: 'nobody to report to' }, expectError: true },
        { call: 'dispatch_agent', args: { agent: 'implement', prompt: 'PLAYBOOK=deep one' }, save: 'c1' },
        { call: 'dispatch_agent', args: { agent: 'implement', prompt: 'PLAYBOOK=deep two' }, save: 'c2' },
        { call: 'dispatch_agent', args: { agent: 'implement', prompt: 'PLAYBOOK=deep three' }, expectError: true },
        {
          call: 'wait_for_runs',
          args: { run_ids: ['{{c1.run_id}}', '{{c2.run_id}}'], timeout_seconds: 120 },
          save: 'w',
        },
        { call: 'send_followup', args: { run_id: '{{c1.run_id}}', message: 'PLAYBOOK=done and one more thing' } },
        { call: 'read_skill', args: { skill: 'triage' } },
        { result: 'children: {{w.runs}}' },
      ],
    };
    playbook.deep = {
      '1': [
        { call: 'dispatch_agent', args: { agent: 'implement', prompt: 'too deep' }, expectError: true },
        { call: 'report', args: { text: 'depth refused as it should be' } },
        { result: 'deep done' },
      ],
      '2': [{ result: 'follow-up done' }],
    };
    usePlaybook(playbook);
    const rootId = await runIdOfDispatch(s, { agent: 'foreman', prompt: 'PLAYBOOK=rooted' });
    const root = await waitForState(s, rootId, ['SUCCEEDED', 'FAILED', 'ERROR'], 60_000);
    expect(root.state, JSON.stringify(root.status_message)).toBe('SUCCEEDED');
    const events = await eventsOf(s, rootId);
    const failed = events
      .filter((e) => e.type === 'tool_result' && e.data.status === 'failed')
      .map((e) => e.data.output.text);
    expect(failed).toEqual([
      `run ${otherTeamRun} is not in this run's tree (only the runs of one tree can see each other)`,
      `run ${unrelatedRun} is not in this run's tree (only the runs of one tree can see each other)`,
      'this run has no parent to report to (a root run answers with reply or its result)',
      `run ${rootId} has started 2 children, its limit (AGENTYARD_RUN_MAX_CHILDREN 2)`,
    ]);
    const children = (
      await s.server.ctx.db.query<{ id: string }>('SELECT id FROM runs WHERE parent_run_id = $1 ORDER BY created_at', [
        rootId,
      ])
    ).rows.map((r) => r.id);
    expect(children).toHaveLength(2);
    const childEvents = await eventsOf(s, children[0]!);
    expect(childEvents.find((e) => e.type === 'tool_result' && e.data.status === 'failed')?.data.output.text).toContain(
      'a child would pass the depth limit of 1 (AGENTYARD_RUN_TREE_MAX_DEPTH)',
    );
    // the follow-up continued the child in a second execution
    await whenRunsTold(
      s,
      'the follow-up to continue the child',
      async () => (await executionsOf(s, children[0]!)).length === 2,
    );
    await waitForState(s, children[0]!, ['SUCCEEDED'], 30_000);
    // reports reached the root through wait_for_runs (consumed there, so they did not continue it again)
    expect(events.filter((e) => e.type === 'followup' && e.data.delivery === 'tool')).toHaveLength(2);
    expect(await executionsOf(s, rootId)).toHaveLength(1);
    // the skill read is a read_skill action in the conversation
    const conversation = await s.api('GET', `/agent/runs/${rootId}/conversation`);
    expect(JSON.stringify(conversation.body)).toContain('"skill_path":"skills/triage/SKILL.md"');
    // the token the agent printed is redacted in every event, log lines included
    const all = JSON.stringify(events);
    expect(all).toContain('my token is [redacted]');
    expect(all).not.toMatch(/ayrt_/);
    // and the command harness's workspace holds no token
    const [execution] = await executionsOf(s, rootId);
    for (const file of filesUnder(execution!.workspace!)) expect(readFileSync(file, 'utf8')).not.toMatch(/ayrt_/);
  });

  it('a run token works only while its execution runs, and only the MCP configuration holds it', {
    timeout: 90_000,
  }, async () => {
    expect(
      (await s.api('PUT', '/secrets/anthropic', { value: 'sk-ant-api03-interface-test-key' })).status,
    ).toBeLessThan(300);
    const runId = (
      await s.api('POST', '/agent/runs', {
        prompt: 'Hold on UNTIL release',
        config: { harness: { type: 'claude' }, harness_auth_secrets: { claude_auth_secret_name: 'anthropic' } },
      })
    ).body.run_id as string;
    await waitForState(s, runId, ['INPROGRESS'], 30_000);
    // started: its execution got its workspace in the statement that moved the run INPROGRESS
    const execution = (await executionsOf(s, runId))[0]!;
    const workspace = execution.workspace!;
    // the server's own file, outside the agent-writable workspace (bound read-only into the sandbox)
    const config = JSON.parse(
      readFileSync(path.join(s.dataDir, 'execution-files', execution.id, 'claude-mcp.json'), 'utf8'),
    );
    expect(config.mcpServers.factory).toMatchObject({ type: 'http', url: `${s.apiUrl}/mcp/factory` });
    const token = /^Bearer (ayrt_\S+)$/.exec(config.mcpServers.factory.headers.Authorization)![1]!;
    const stored = await s.server.ctx.db.query<{ token_hash: string }>(
      'SELECT token_hash FROM run_tokens WHERE run_id = $1',
      [runId],
    );
    expect(stored.rows[0]!.token_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(stored.rows[0]!.token_hash).not.toBe(token);
    for (const file of filesUnder(workspace)) expect(readFileSync(file, 'utf8')).not.toContain(token);

    const client = await mcpClient(s, token);
    const tools = (await client.listTools()).tools.map((t) => t.name);
    expect(tools).toEqual(
      expect.arrayContaining(['ask_user', 'reply', 'report', 'wait_for_runs', 'send_followup', 'get_run']),
    );
    const self = await callTool(client, 'get_run', { run_id: runId });
    expect(self.data).toMatchObject({ run_id: runId, state: 'INPROGRESS' });
    expect((await callTool(client, 'get_run', { run_id: otherTeamRun })).isError).toBe(true);
    // a run of no factory has no agents to dispatch
    expect((await callTool(client, 'list_agents')).text).toBe(
      'this run belongs to no factory, so it has no agents to work with',
    );
    await client.close();

    // the agent waits in its sandbox's own workspace
    (await import('node:fs')).writeFileSync(path.join(liveWorkspace(workspace), 'release'), '');
    await waitForState(s, runId, ['SUCCEEDED'], 30_000);
    const after = await fetch(`${s.apiUrl}/mcp/factory`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${token}`,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(after.status).toBe(401);
    expect(((await after.json()) as { detail: string }).detail).toBe(
      'the run token is unknown, or its execution is no longer running',
    );
    expect(JSON.stringify(await eventsOf(s, runId))).not.toContain(token);
  });

  it('a cancel reaches the descendants; a tree past its deadline loses its children; active runs are capped', async () => {
    playbook.parent = {
      default: [
        { call: 'dispatch_agent', args: { agent: 'implement', prompt: 'PLAYBOOK=sleeper' }, save: 'c' },
        { call: 'wait_for_runs', args: { run_ids: ['{{c.run_id}}'], timeout_seconds: 300 } },
        { result: 'child ended' },
      ],
    };
    playbook.sleeper = { default: [{ sleep: 120 }, { result: 'woke' }] };
    usePlaybook(playbook);
    const childOf = (id: string) =>
      waitForCreatedRun(s.server.ctx.bus, async () => {
        const res = await s.server.ctx.db.query<{ id: string }>('SELECT id FROM runs WHERE parent_run_id = $1', [id]);
        return res.rows[0]?.id;
      });

    const rootId = await runIdOfDispatch(s, { agent: 'foreman', prompt: 'PLAYBOOK=parent' });
    const childId = await childOf(rootId);
    await waitForState(s, childId, ['INPROGRESS'], 30_000);
    const cancelled = await s.api('POST', `/agent/runs/${rootId}/cancel`);
    expect(cancelled.status).toBe(200);
    const child = await waitForState(s, childId, ['CANCELLED', 'SUCCEEDED', 'FAILED', 'ERROR'], 30_000);
    expect(child.state).toBe('CANCELLED');
    expect(child.status_message.message).toBe(`Cancelled with its ancestor ${rootId}`);

    // the deadline: the child of a tree past it is cancelled; the root is not
    const root2 = await runIdOfDispatch(s, { agent: 'foreman', prompt: 'PLAYBOOK=parent' });
    const child2 = await childOf(root2);
    await waitForState(s, child2, ['INPROGRESS'], 30_000);
    // active: root2, child2 → two more fill the factory's cap of 4, the next is refused
    const extra = [
      await runIdOfDispatch(s, { agent: 'implement', prompt: 'PLAYBOOK=sleeper a' }),
      await runIdOfDispatch(s, { agent: 'implement', prompt: 'PLAYBOOK=sleeper b' }),
    ];
    await expect(runIdOfDispatch(s, { agent: 'implement', prompt: 'PLAYBOOK=sleeper c' })).rejects.toThrow(
      /the factory has 4 active runs, its limit \(AGENTYARD_FACTORY_MAX_ACTIVE_RUNS 4\)/,
    );
    const later = new Date(Date.now() + (LIMITS.maxTreeMinutes + 1) * 60_000);
    const overdue = await cancelOverdue(s.server.ctx.db, s.server.ctx.bus, LIMITS as never, later);
    expect(overdue).toEqual([child2]);
    expect((await waitForState(s, child2, ['CANCELLED'], 10_000)).status_message.message).toContain('deadline');
    // the root saw its child end and finished
    expect((await waitForState(s, root2, ['SUCCEEDED', 'FAILED', 'ERROR'], 30_000)).state).toBe('SUCCEEDED');
    for (const id of extra) expect((await s.api('POST', `/agent/runs/${id}/cancel`)).status).toBe(200);
    expect(factoryId).toMatch(/^fac_/);
  });
});
