/**
 * Each harness end to end through a real server and a real child process (the fake CLIs speak each CLI's
 * real interface): the command line, the CLI's MCP configuration file, the provider key from a managed
 * secret in the environment and never on the command line or in events, the streaming output parsed into
 * events and the conversation, and exit codes mapped onto run states.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { hostPid, readPidFile } from '../support/processes.ts';
import { pollUntil } from '../support/signals.ts';
import {
  createRun,
  eventsOf,
  executionsOf,
  fakeRecords,
  pidAlive,
  startExecServer,
  waitForState,
  whenRunsTold,
  liveWorkspace,
} from './support.ts';
import type { ExecServer } from './support.ts';

const SECRET = 'sk-test-0123456789abcdef';
const MCP = {
  github: { command: 'gh-mcp', args: ['--stdio'], env: { GH_HOST: 'github.example.com' } },
  docs: { url: 'https://mcp.example.com/sse', headers: { 'X-Team': 'a' } },
  tracker: { url: 'https://mcp.example.com/mcp' },
  hosted: { warp_id: 'mcp_123' },
};

/** Every reading of `text` a reader could try: as is, URL-decoded, and base64-decoded from each offset. */
function decodedForms(text: string): string[] {
  const forms = [text];
  for (const token of text.replaceAll('[redacted]', '').split(/[^A-Za-z0-9+/_%=-]+/)) {
    try {
      forms.push(decodeURIComponent(token));
    } catch {
      // not URL-encoded
    }
    for (let offset = 0; offset < 4; offset++) {
      forms.push(Buffer.from(token.slice(offset), 'base64').toString('latin1'));
      forms.push(Buffer.from(token.slice(offset), 'base64url').toString('latin1'));
    }
  }
  return forms;
}

/** The run token as each CLI's MCP configuration carries it. */
const RUN_TOKEN_HEADER = expect.stringMatching(/^Bearer ayrt_[A-Za-z0-9_-]{40,}$/);

describe.each(ENGINES)('harnesses end to end on %s', (engine) => {
  let s: ExecServer;
  beforeAll(async () => {
    s = await startExecServer(engine);
    for (const name of ['claude-key', 'codex-key', 'gemini-key', 'command-key']) {
      expect((await s.api('PUT', `/secrets/${name}`, { value: SECRET })).status).toBeLessThan(300);
    }
  });
  afterAll(async () => {
    await s?.close();
  });

  async function runWith(harness: string, prompt: string, extra: Record<string, unknown> = {}) {
    const runId = await createRun(s, {
      prompt,
      config: {
        harness: { type: harness, model_id: `${harness}-model-1` },
        harness_auth_secrets: { [`${harness}_auth_secret_name`]: `${harness}-key` },
        base_prompt: 'You are the test agent.',
        mcp_servers: MCP,
        ...extra,
      },
    });
    const run = await waitForState(s, runId, ['SUCCEEDED', 'FAILED', 'ERROR']);
    const [execution] = await executionsOf(s, runId);
    return {
      runId,
      run,
      execution: execution!,
      records: execution!.workspace ? fakeRecords(execution!.workspace) : [],
      events: await eventsOf(s, runId),
    };
  }

  function expectNoSecret(value: unknown) {
    expect(JSON.stringify(value)).not.toContain(SECRET);
  }

  it('claude: stream-json in and out, --mcp-config, --model, --append-system-prompt, key in the environment', async () => {
    const { runId, run, execution, records, events } = await runWith('claude', 'Fix the bug LIST_FILES');
    expect(run.state).toBe('SUCCEEDED');
    expect(run.status_message.message).toContain('Files:');
    const rec = records[0];
    expect(rec.argv.slice(0, 7)).toEqual([
      '-p',
      '--input-format',
      'stream-json',
      '--output-format',
      'stream-json',
      '--verbose',
      '--permission-mode',
    ]);
    expect(rec.argv).toContain('--strict-mcp-config');
    expect(rec.argv[rec.argv.indexOf('--model') + 1]).toBe('claude-model-1');
    expect(rec.appendSystemPrompt).toBe('You are the test agent.');
    expect(rec.env.ANTHROPIC_API_KEY).toBe(`<${SECRET.length} chars>`);
    expectNoSecret(rec.argv);
    // the server's own environment stays out
    expect(rec.env.DATABASE_URL).toBeUndefined();
    expect(rec.env.AGENTYARD_MASTER_KEY).toBeUndefined();
    expect(rec.env.AGENTYARD_RUN_ID).toBe(runId);
    const mcpFile = rec.argv[rec.argv.indexOf('--mcp-config') + 1];
    // the server's own file, outside the workspace (and gone with the execution)
    expect(mcpFile).toBe(path.join(s.dataDir, 'execution-files', execution.id, 'claude-mcp.json'));
    expect(existsSync(mcpFile)).toBe(false);
    expect(rec.mcpConfig).toEqual({
      mcpServers: {
        github: { type: 'stdio', command: 'gh-mcp', args: ['--stdio'], env: { GH_HOST: 'github.example.com' } },
        docs: { type: 'sse', url: 'https://mcp.example.com/sse', headers: { 'X-Team': 'a' } },
        tracker: { type: 'http', url: 'https://mcp.example.com/mcp' },
        // the factory interface, with this execution's run token (docs/orchestration.md)
        factory: { type: 'http', url: `${s.url}/api/v1/mcp/factory`, headers: { Authorization: RUN_TOKEN_HEADER } },
      },
    });
    expect(rec.prompt).toContain('Fix the bug LIST_FILES');

    const types = events.map((e) => e.type);
    expect(types).toContain('session');
    expect(events.find((e) => e.type === 'session')!.data.session_id).toBe(execution.agent_session_id);
    expect(events.find((e) => e.type === 'tool_call')!.data).toMatchObject({
      name: 'Bash',
      category: 'command',
      input: { command: 'ls -a' },
    });
    expect(events.find((e) => e.type === 'tool_result')!.data).toMatchObject({ name: 'Bash', status: 'completed' });
    expect(events.find((e) => e.type === 'usage')!.data).toMatchObject({
      input_tokens: 100,
      output_tokens: 20,
      cost_usd: 0.0125,
    });
    expect(events.find((e) => e.type === 'status')!.data.message).toContain('hosted');
    expect(events.filter((e) => e.type === 'state').map((e) => e.data.state)).toEqual([
      'CLAIMED',
      'INPROGRESS',
      'SUCCEEDED',
    ]);
    expect(execution).toMatchObject({ attempt: 1, harness: 'claude', outcome: 'succeeded', exit_code: 0 });
    expectNoSecret(events);
    expect((await s.api('GET', `/agent/runs/${runId}`)).body.request_usage).toMatchObject({
      total_tokens: 120,
      inference_cost_usd: 0.0125,
    });

    const conversation = (await s.api('GET', `/agent/runs/${runId}/conversation`)).body;
    expect(conversation.conversation_id).toBe(runId);
    const step = conversation.steps[0];
    expect(step.id).toBe(execution.id);
    const blocks = step.messages.flatMap((m: { role: string; content: { type: string }[] }) =>
      m.content.map((c) => ({ role: m.role, ...c })),
    );
    expect(blocks[0]).toMatchObject({ role: 'user', type: 'text', text: 'Fix the bug LIST_FILES' });
    expect(blocks).toContainEqual(
      expect.objectContaining({ role: 'assistant', type: 'action', category: 'command', name: 'Bash' }),
    );
    expect(blocks).toContainEqual(
      expect.objectContaining({ role: 'tool', type: 'action_result', state: 'completed', name: 'Bash' }),
    );
    expect(blocks).toContainEqual(expect.objectContaining({ role: 'assistant', type: 'text' }));
  });

  it('codex: exec --json with the prompt on stdin, config.toml in CODEX_HOME', async () => {
    const { run, execution, records, events } = await runWith('codex', 'Refactor LIST_FILES', {
      harness: { type: 'codex', model_id: 'gpt-5-codex', reasoning_level: 'high' },
    });
    expect(run.state).toBe('SUCCEEDED');
    const rec = records[0];
    expect(rec.argv).toEqual([
      'exec',
      '--json',
      '--skip-git-repo-check',
      '--cd',
      execution.workspace,
      '--model',
      'gpt-5-codex',
      '-',
    ]);
    expect(rec.env.CODEX_HOME).toBe(path.join(execution.workspace!, '.agentyard/home/.codex'));
    expect(rec.env.OPENAI_API_KEY).toBe(`<${SECRET.length} chars>`);
    expect(rec.mcp).toEqual({
      github: { command: 'gh-mcp', args: ['--stdio'], env: { GH_HOST: 'github.example.com' } },
      docs: { url: 'https://mcp.example.com/sse', http_headers: { 'X-Team': 'a' } },
      tracker: { url: 'https://mcp.example.com/mcp' },
      factory: { url: `${s.url}/api/v1/mcp/factory`, http_headers: { Authorization: RUN_TOKEN_HEADER } },
    });
    const toml = readFileSync(path.join(rec.env.CODEX_HOME, 'config.toml'), 'utf8');
    expect(toml).toContain('model_reasoning_effort = "high"');
    expect(toml).toContain('developer_instructions = "You are the test agent."');
    expectNoSecret(rec.argv);
    expect(events.find((e) => e.type === 'session')!.data.session_id).toBe(execution.agent_session_id);
    expect(events.find((e) => e.type === 'tool_call')!.data).toMatchObject({
      name: 'shell',
      category: 'command',
      input: { command: 'ls -a' },
    });
    expect(events.find((e) => e.type === 'tool_result')!.data).toMatchObject({
      status: 'completed',
      output: { exit_code: 0 },
    });
    expect(events.find((e) => e.type === 'message')!.data.text).toContain('Files:');
    expect(events.find((e) => e.type === 'usage')!.data).toMatchObject({
      input_tokens: 1200,
      cached_input_tokens: 200,
      output_tokens: 345,
    });
  });

  it('gemini: stream-json with the task on stdin, settings.json in HOME, deltas joined into one message', async () => {
    const { run, execution, records, events } = await runWith('gemini', 'Summarise LIST_FILES');
    expect(run.state).toBe('SUCCEEDED');
    const rec = records[0];
    expect(rec.argv).toEqual([
      '--output-format',
      'stream-json',
      '--approval-mode',
      'yolo',
      '--model',
      'gemini-model-1',
      '--prompt',
      expect.any(String),
    ]);
    expect(rec.prompt.startsWith('Summarise LIST_FILES')).toBe(true);
    expect(rec.env.GEMINI_API_KEY).toBe(`<${SECRET.length} chars>`);
    expect(rec.mcp).toEqual({
      github: { command: 'gh-mcp', args: ['--stdio'], env: { GH_HOST: 'github.example.com' }, trust: true },
      docs: { url: 'https://mcp.example.com/sse', headers: { 'X-Team': 'a' }, trust: true },
      tracker: { httpUrl: 'https://mcp.example.com/mcp', trust: true },
      factory: { httpUrl: `${s.url}/api/v1/mcp/factory`, headers: { Authorization: RUN_TOKEN_HEADER }, trust: true },
    });
    expect(readFileSync(path.join(execution.workspace!, 'GEMINI.md'), 'utf8')).toBe('You are the test agent.');
    const messages = events.filter((e) => e.type === 'message');
    expect(messages).toHaveLength(1);
    expect(messages[0]!.data.text).toMatch(/^Files: /);
    expect(events.find((e) => e.type === 'tool_call')!.data).toMatchObject({
      name: 'run_shell_command',
      category: 'command',
    });
    expect(events.find((e) => e.type === 'usage')!.data).toMatchObject({ input_tokens: 150, output_tokens: 20 });
  });

  it('command: the run document on stdin, Agentyard events on stdout, artifacts added to the run', async () => {
    const { runId, run, execution, records, events } = await runWith('command', 'Ship it ARTIFACT', {
      harness: { type: 'command' },
      metadata: undefined,
    });
    expect(run.state).toBe('SUCCEEDED');
    // the factory interface: its URL and the run token (recorded by length only) in the environment
    expect(records[0].env.AGENTYARD_MCP_URL).toBe(`${s.url}/api/v1/mcp/factory`);
    expect(records[0].env.AGENTYARD_RUN_TOKEN).toMatch(/^<\d+ chars>$/);
    const doc = records[0].document;
    expect(doc).toMatchObject({
      format: 'agentyard.run/v1',
      run_id: runId,
      execution_id: execution.id,
      attempt: 1,
      base_prompt: 'You are the test agent.',
      workspace: execution.workspace,
      resume_session_id: null,
    });
    expect(doc.prompt).toContain('Ship it ARTIFACT');
    expect(Object.keys(doc.mcp_servers).sort()).toEqual(['docs', 'github', 'tracker']);
    expect(records[0].env.AGENT_API_KEY).toBe(`<${SECRET.length} chars>`);
    expect(events.find((e) => e.type === 'status' && String(e.data.message).startsWith('working in'))).toBeTruthy();
    const item = (await s.api('GET', `/agent/runs/${runId}`)).body;
    expect(item.artifacts).toEqual([
      {
        artifact_type: 'PULL_REQUEST',
        created_at: expect.any(String),
        data: { url: 'https://example.com/pr/1', branch: 'fix', artifact_uid: expect.stringMatching(/^art_/) },
      },
    ]);
  });

  it('maps exits: a failing agent → FAILED, a crash → FAILED with its exit code, an auth failure and a missing secret → FAILED', async () => {
    const failed = await runWith('claude', 'Please FAIL');
    expect(failed.run.state).toBe('FAILED');
    expect(failed.run.status_message).toMatchObject({ error_code: 'internal_error', error_detail: 'agent_failed' });
    expect(failed.run.status_message.message).toContain('The task failed on purpose');
    expect(failed.execution).toMatchObject({ outcome: 'failed', exit_code: 1 });

    const crashed = await runWith('codex', 'CRASH 3');
    expect(crashed.run.state).toBe('FAILED');
    expect(crashed.run.status_message.message).toContain('exited with code 3');
    expect(crashed.execution.exit_code).toBe(3);

    const auth = await runWith('gemini', 'hello', { harness_auth_secrets: {} });
    expect(auth.run.state).toBe('FAILED');
    expect(auth.run.status_message).toMatchObject({ error_detail: 'harness_auth_failed' });

    const missingSecret = await runWith('claude', 'hello', {
      harness_auth_secrets: { claude_auth_secret_name: 'no-such-secret' },
    });
    expect(missingSecret.run.state).toBe('FAILED');
    expect(missingSecret.run.status_message).toMatchObject({ error_detail: 'secret_not_found' });
    expect(missingSecret.run.status_message.message).toContain('no-such-secret');
  });

  it('cancels a running agent: its whole process tree stops and the run ends CANCELLED', async () => {
    const runId = await createRun(s, {
      prompt: 'long SLEEP 120',
      config: { harness_auth_secrets: { claude_auth_secret_name: 'claude-key' } },
    });
    await waitForState(s, runId, ['INPROGRESS']);
    const [execution] = await executionsOf(s, runId);
    const workspace = execution!.workspace!;
    // the pids the agent wrote are those of its sandbox's pid namespace
    const childPid = await pollUntil(
      () => hostPid(readPidFile(path.join(liveWorkspace(workspace), '.fake-child.pid')), workspace),
      { what: 'the agent child: its pid, written in the sandbox (no output tells it)' },
    );
    const agentPid = await pollUntil(() => hostPid(fakeRecords(liveWorkspace(workspace))[0]?.pid, workspace), {
      what: 'the agent: its pid, written in the sandbox (no output tells it)',
    });
    expect((await s.api('POST', `/agent/runs/${runId}/cancel`)).body).toBe(runId);
    await pollUntil(() => !pidAlive(childPid) && !pidAlive(agentPid), {
      what: 'the tree to stop (processes of the sandbox: no exit event reaches the test)',
      timeoutMs: 10_000,
    });
    await whenRunsTold(
      s,
      'the execution to end',
      async () => (await executionsOf(s, runId))[0]!.outcome === 'cancelled',
    );
    expect((await s.api('GET', `/agent/runs/${runId}`)).body.state).toBe('CANCELLED');
  });

  it('never stores the provider key, even when the agent prints it', async () => {
    const { run, events } = await runWith('claude', 'ECHO_SECRET');
    expect(run.state).toBe('SUCCEEDED');
    expect(events.find((e) => e.type === 'message')!.data.text).toBe('The key is [redacted]');
    expectNoSecret(events);
    expectNoSecret(run);
  });

  it('redacts the provider key in base64 (three offsets, both alphabets) and URL-encoded', async () => {
    const { run, events } = await runWith('claude', 'ECHO_ENCODED_SECRET');
    expect(run.state).toBe('SUCCEEDED');
    const text = events.find((e) => e.type === 'message')!.data.text as string;
    expect(text.split(' ').length).toBe(4);
    expect(text.match(/\[redacted\]/g)?.length).toBe(4);
    expect(decodedForms(text).some((d) => d.includes(SECRET.slice(2, 14)))).toBe(false);
    expectNoSecret(events);
  });
});

describe.each(ENGINES)('harness executables on %s', (engine) => {
  it('ends a run ERROR (harness_unavailable) when the executable does not exist', async () => {
    const s = await startExecServer(engine, {
      settings: { bins: { claude: '/nonexistent/claude', codex: 'codex', gemini: 'gemini', command: '' } },
    });
    try {
      const runId = await createRun(s, { prompt: 'hello' });
      const run = await waitForState(s, runId, ['ERROR', 'FAILED', 'SUCCEEDED']);
      expect(run.state).toBe('ERROR');
      expect(run.status_message).toMatchObject({ error_detail: 'harness_unavailable' });
      expect(run.status_message.message).toContain('/nonexistent/claude');
    } finally {
      await s.close();
    }
  });
});
