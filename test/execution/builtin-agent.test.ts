/**
 * The built-in agent (`harness: agentyard`) against a stand-in OpenAI-compatible endpoint, reached through the
 * `openai` client from inside the bubblewrap sandbox: shell and file tools, a follow-up mid-run, a cancel, a
 * tool call with bad arguments, a continuation that resumes the transcript, MCP tools, and a hung endpoint.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { firstUser, startOpenAiStandin, textOf, toolResults } from '../support/openai-standin.ts';
import type { OpenAiStandin, StandinReply, StandinRequest } from '../support/openai-standin.ts';
import {
  STANDIN_KEY,
  createRun,
  eventsOf,
  executionsOf,
  startBuiltinAgentServer,
  waitForState,
  whenRunsTold,
} from './support.ts';
import type { BuiltinAgentServer, ExecServer } from './support.ts';

const KEY = STANDIN_KEY;

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    const info = statSync(full, { throwIfNoEntry: false });
    if (info?.isDirectory()) out.push(...filesUnder(full));
    else if (info?.isFile()) out.push(full);
  }
  return out;
}

/** A script per conversation, keyed by a word of the run's prompt. */
const scripts = new Map<string, (req: StandinRequest, step: number) => StandinReply | Promise<StandinReply>>();

function call(name: string, args: unknown): StandinReply {
  return { toolCalls: [{ name, arguments: typeof args === 'string' ? args : JSON.stringify(args) }] };
}

describe('the built-in agent', () => {
  let server: BuiltinAgentServer;
  let s: ExecServer;
  let model: OpenAiStandin;

  beforeAll(async () => {
    server = await startBuiltinAgentServer((req) => {
      const key = [...scripts.keys()].find((k) => firstUser(req).includes(k));
      if (!key) return { content: 'no script' };
      const step = req.messages.filter((m) => m.role === 'assistant').length;
      return scripts.get(key)!(req, step);
    });
    ({ s, model } = server);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('calls the shell, writes and edits a file, and finishes with its answer as the result', async () => {
    scripts.set('SHELL-EDIT', (req, step) => {
      switch (step) {
        case 0:
          return call('shell', { command: 'echo hello-from-shell; echo "$AGENTYARD_OPENAI_API_KEY" | wc -c' });
        case 1:
          return call('write_file', { path: 'notes/plan.md', content: 'alpha beta\n' });
        case 2:
          return call('edit_file', { path: 'notes/plan.md', old_text: 'beta', new_text: 'gamma' });
        default:
          return { content: `All done (${toolResults(req).length} tools used).` };
      }
    });
    const runId = await createRun(s, { prompt: 'SHELL-EDIT: make a plan', config: { model_id: 'auto' } });
    const run = await waitForState(s, runId, ['SUCCEEDED', 'FAILED', 'ERROR']);
    expect(run.state).toBe('SUCCEEDED');
    expect(run.result).toBe('All done (3 tools used).');
    const events = await eventsOf(s, runId);
    const shellResult = events.find((e) => e.type === 'tool_result' && e.data.name === 'shell')!;
    expect(shellResult.data).toMatchObject({ category: 'command', status: 'completed' });
    expect(shellResult.data.output.output).toContain('hello-from-shell');
    // the shell does not inherit the model key: an empty line is 1 byte
    expect(shellResult.data.output.output.trim().split('\n').at(-1)).toBe('1');
    expect(events.filter((e) => e.type === 'tool_call').map((e) => e.data.name)).toEqual([
      'shell',
      'write_file',
      'edit_file',
    ]);
    expect(events.some((e) => e.type === 'usage' && e.data.input_tokens === 100)).toBe(true);
    expect(events.find((e) => e.type === 'status' && /bubblewrap/.test(e.data.message))).toBeDefined();
    const [execution] = await executionsOf(s, runId);
    expect(readFileSync(path.join(execution!.workspace!, 'notes/plan.md'), 'utf8')).toBe('alpha gamma\n');
    // model `auto` is the instance's model; the key goes in the Authorization header only
    const requests = model.requests.filter((r) => firstUser(r).includes('SHELL-EDIT'));
    expect(requests).toHaveLength(4);
    expect(requests.every((r) => r.model === 'local-model' && r.authorization === `Bearer ${KEY}`)).toBe(true);
    expect(requests[0]!.tools.map((t) => t.function.name)).toEqual(
      expect.arrayContaining(['shell', 'read_file', 'write_file', 'edit_file', 'list_directory']),
    );
    expect(JSON.stringify(events)).not.toContain(KEY);
    for (const file of filesUnder(execution!.workspace!)) expect(readFileSync(file, 'utf8')).not.toContain(KEY);
  });

  it('takes a follow-up in the middle of a run before its next model request', async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    scripts.set('MIDRUN', async (req, step) => {
      if (step === 0) {
        await released;
        return call('list_directory', {});
      }
      const followup = req.messages
        .filter((m) => m.role === 'user')
        .map(textOf)
        .at(-1);
      return { content: `heard: ${followup}` };
    });
    const runId = await createRun(s, { prompt: 'MIDRUN: look around' });
    await model.waitForRequest((r) => firstUser(r).includes('MIDRUN'));
    const res = await s.api('POST', `/agent/runs/${runId}/followups`, { message: 'Also say banana' });
    expect(res.status).toBe(200);
    await whenRunsTold(s, 'the follow-up to reach the agent', async () =>
      (await eventsOf(s, runId)).some((e) => e.type === 'followup' && e.data.delivery === 'live'),
    );
    release();
    const run = await waitForState(s, runId, ['SUCCEEDED', 'FAILED', 'ERROR']);
    expect(run.state).toBe('SUCCEEDED');
    expect(run.result).toBe('heard: Also say banana');
    expect(await executionsOf(s, runId)).toHaveLength(1);
    const results = (await eventsOf(s, runId)).filter((e) => e.type === 'result');
    expect(results).toHaveLength(1);
    expect(results[0]!.data.prompts).toBe(2);
  });

  it('continues a finished run from its transcript', async () => {
    scripts.set('RESUME', (req) => {
      const users = req.messages.filter((m) => m.role === 'user').map(textOf);
      return { content: `turn ${users.length}: ${users.at(-1)}` };
    });
    const runId = await createRun(s, { prompt: 'RESUME: first' });
    expect((await waitForState(s, runId, ['SUCCEEDED'])).result).toBe('turn 1: RESUME: first');
    await s.api('POST', `/agent/runs/${runId}/followups`, { message: 'second' });
    await waitForState(s, runId, ['SUCCEEDED', 'FAILED']);
    expect((await executionsOf(s, runId)).map((e) => e.ended_at !== null)).toEqual([true, true]);
    const run = (await s.api('GET', `/agent/runs/${runId}`)).body;
    expect(run.result).toBe('turn 2: second');
    const last = model.requests.filter((r) => firstUser(r).includes('RESUME')).at(-1)!;
    // the whole conversation went back to the model: the first prompt, its answer, the follow-up
    expect(last.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
  });

  it('turns bad tool arguments into tool errors the model reads', async () => {
    scripts.set('BADARGS', (req, step) => {
      if (step === 0)
        return {
          toolCalls: [
            { name: 'write_file', arguments: '{"path": "x.txt", "content": ' },
            { name: 'read_file', arguments: '{"path": 42}' },
            { name: 'no_such_tool', arguments: '{}' },
          ],
        };
      return {
        content: toolResults(req)
          .map((m) => textOf(m).split('.')[0])
          .join(' | '),
      };
    });
    const runId = await createRun(s, { prompt: 'BADARGS' });
    const run = await waitForState(s, runId, ['SUCCEEDED', 'FAILED', 'ERROR']);
    expect(run.state).toBe('SUCCEEDED');
    expect(run.result).toContain('Error: the arguments are not valid JSON');
    expect(run.result).toContain('Error: bad arguments for read_file: `path` must be a string');
    expect(run.result).toContain('Error: there is no tool named "no_such_tool"');
    const failed = (await eventsOf(s, runId)).filter((e) => e.type === 'tool_result' && e.data.status === 'failed');
    expect(failed).toHaveLength(3);
  });

  it('stops within a second of a cancel, with its command', async () => {
    scripts.set('CANCEL', (req) => {
      const interrupted = toolResults(req).find((m) => /interrupted|stopped/.test(textOf(m)));
      return interrupted
        ? { content: `after the cancel: ${textOf(interrupted)}` }
        : call('shell', { command: 'sleep 60' });
    });
    const runId = await createRun(s, { prompt: 'CANCEL' });
    await whenRunsTold(s, 'the shell to start', async () =>
      (await eventsOf(s, runId)).some((e) => e.type === 'tool_call' && e.data.name === 'shell'),
    );
    const t0 = performance.now();
    const res = await s.api('POST', `/agent/runs/${runId}/cancel`);
    expect(res.status).toBe(200);
    const run = await waitForState(s, runId, ['CANCELLED', 'SUCCEEDED', 'FAILED', 'ERROR'], 10_000, undefined);
    expect(run.state).toBe('CANCELLED');
    const execution = await whenRunsTold(s, 'the execution to end', async () => {
      const [e] = await executionsOf(s, runId);
      return e?.ended_at ? e : undefined;
    });
    expect(execution.outcome).toBe('cancelled');
    // the agent and its command end within a second of the cancel reaching the executor (a poll, 200 ms here)
    expect(performance.now() - t0).toBeLessThan(1_000 + 200 + 500);
    const events = await eventsOf(s, runId);
    expect(events.some((e) => e.type === 'result' && e.data.is_error === false)).toBe(false);
    // a follow-up continues the transcript, whose interrupted call is answered as interrupted
    expect((await s.api('POST', `/agent/runs/${runId}/followups`, { message: 'go on' })).status).toBe(200);
    const resumed = await waitForState(s, runId, ['SUCCEEDED', 'FAILED']);
    // (the call's result says it was stopped, or, when the agent ended before writing it, that it was interrupted)
    expect(resumed.result).toMatch(
      /^after the cancel: (command was stopped with the agent|Error: the tool call was interrupted)/,
    );
  });

  it('refuses a harness.base_url that is not an http(s) URL or carries credentials', async () => {
    for (const base_url of ['file:///etc/passwd', 'not a url', 'http://user:pw@models/v1']) {
      const res = await s.api('POST', '/agent/runs', {
        prompt: 'x',
        config: { harness: { type: 'agentyard', base_url } },
      });
      expect(res.status, base_url).toBe(400);
      expect(res.body.detail).toContain('config.harness.base_url');
    }
  });

  it('sends the instance key only to the instance endpoint', async () => {
    const other = await startOpenAiStandin(() => ({ content: 'answered by the other endpoint' }));
    // a loopback endpoint is reachable from the sandbox only when the operator lists it (the egress policy)
    s.parts.settings.sandbox.egressAllowAddresses.push(new URL(other.baseUrl).host);
    try {
      const runId = await createRun(s, {
        prompt: 'OTHER-ENDPOINT',
        config: { harness: { type: 'agentyard', base_url: other.baseUrl } },
      });
      const run = await waitForState(s, runId, ['SUCCEEDED', 'FAILED', 'ERROR']);
      expect(run.result).toBe('answered by the other endpoint');
      expect(other.requests[0]!.authorization).toBe('Bearer none');
    } finally {
      await other.close();
    }
  });

  it('offers the tools of the run’s MCP servers', async () => {
    const mcp = createServer(async (req, res) => {
      const server = new McpServer({ name: 'test-tools', version: '1.0.0' });
      server.registerTool(
        'shout',
        { description: 'Upper-cases a text', inputSchema: { text: z.string() } },
        async ({ text }) => ({ content: [{ type: 'text', text: text.toUpperCase() }] }),
      );
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on('close', () => void transport.close());
      await server.connect(transport);
      await transport.handleRequest(req, res);
    });
    mcp.listen(0, '127.0.0.1');
    await once(mcp, 'listening');
    const url = `http://127.0.0.1:${(mcp.address() as AddressInfo).port}/mcp`;
    // a loopback service is reachable from the sandbox only when the operator lists it (the egress policy)
    const allowed = s.parts.settings.sandbox.egressAllowAddresses;
    allowed.push(`127.0.0.1:${(mcp.address() as AddressInfo).port}`);
    try {
      scripts.set('MCPTOOL', (req, step) => {
        if (step === 0) return call('mcp__tools__shout', { text: 'quiet words' });
        return { content: `mcp said ${textOf(toolResults(req)[0])}` };
      });
      const runId = await createRun(s, { prompt: 'MCPTOOL', config: { mcp_servers: { tools: { url } } } });
      const run = await waitForState(s, runId, ['SUCCEEDED', 'FAILED', 'ERROR']);
      expect(run.result).toBe('mcp said QUIET WORDS');
      const events = await eventsOf(s, runId);
      expect(events.find((e) => e.type === 'tool_result')!.data).toMatchObject({
        name: 'mcp__tools__shout',
        category: 'integration',
        status: 'completed',
      });
    } finally {
      mcp.closeAllConnections();
      mcp.close();
    }
  });
});

describe('the built-in agent and a hung endpoint', () => {
  let server: BuiltinAgentServer;
  let s: ExecServer;
  let model: OpenAiStandin;
  beforeAll(async () => {
    server = await startBuiltinAgentServer(() => ({ hang: true }), {
      model: undefined,
      deadlineMs: 6_000,
      requestTimeoutMs: 60_000,
    });
    ({ s, model } = server);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('fails the run at its deadline', async () => {
    const runId = await createRun(s, { prompt: 'anything' });
    await model.waitForRequest(() => true);
    const run = await waitForState(s, runId, ['SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED']);
    expect(run.state).toBe('FAILED');
    expect(run.status_message.message).toContain('deadline');
    expect(model.requests[0]!.model).toBe('auto');
  });
});

describe('the model catalogue', () => {
  it('takes the instance’s own model ids for the built-in agent', async () => {
    const { knownModels } = await import('../../src/runs/models.ts');
    const { builtinModelIds } = await import('../../src/config.ts');
    const ids = builtinModelIds({
      AGENTYARD_OPENAI_MODEL: 'qwen2.5-coder:32b',
      AGENTYARD_OPENAI_MODELS: 'llama3.3, qwen2.5-coder:32b',
    });
    expect(ids).toEqual(['qwen2.5-coder:32b', 'llama3.3']);
    const known = knownModels({ agentModels: undefined, modelCatalogue: 'closed', builtinModels: ids });
    expect(known.ids.has('llama3.3')).toBe(true);
    expect(known.ids.has('auto')).toBe(true);
    expect(known.default_model_id).toBe('auto');
  });
});
