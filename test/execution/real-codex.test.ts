/**
 * The real `@openai/codex` CLI from npm (a devDependency), run as far as it gets without a model: it accepts
 * the configuration file the Codex adapter writes (`codex mcp list` reads the MCP servers back, and `codex
 * exec --strict-config` refuses any field it does not know), and it accepts the adapter's command line and
 * stdin prompt (it starts a thread and a turn, which our parser reads). Then a run executed by the real CLI
 * through a server is cancelled mid-turn.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codexHarness } from '../../src/execution/harnesses/codex.ts';
import type { Assignment } from '../../src/execution/assignment.ts';
import { createWorkspace } from '../../src/execution/workspace.ts';
import { ENGINES } from '../support/db.ts';
import { killQuietly } from '../support/processes.ts';
import { newId } from '../../src/kernel/ids.ts';
import {
  createRun,
  eventsOf,
  executionsOf,
  pidAlive,
  ROOT,
  startExecServer,
  waitForState,
  whenRunsTold,
} from './support.ts';
import type { ExecServer } from './support.ts';

const CODEX = path.join(ROOT, 'node_modules/.bin/codex');

function assignment(executionId: string): Assignment {
  return {
    executionId,
    runId: 'run_real_codex',
    teamId: 'team_x',
    attempt: 1,
    harness: 'codex',
    title: 't',
    prompt: 'Say hello.',
    runPrompt: 'Say hello.',
    basePrompt: 'You are terse.\nReally "terse".',
    modelId: 'gpt-5-codex',
    reasoningLevel: 'high',
    mcpServers: {
      'git hub': {
        command: 'gh-mcp',
        args: ['--stdio', 'a b'],
        env: { GH_HOST: 'github.example.com', QUOTE: 'x"y\\z' },
      },
      docs: { url: 'https://mcp.example.com/mcp', headers: { 'X-Team': 'a' } },
      hosted: { warp_id: 'mcp_1' },
    },
    skill: undefined,
    attachments: [],
    secretEnv: {},
    authSource: 'none',
    resumeSessionId: undefined,
    previousExecutionId: undefined,
    followups: [],
    run: { source: 'API', config: {}, metadata: {}, createdAt: new Date().toISOString(), sessionLink: 'http://x' },
  };
}

describe('the real Codex CLI', () => {
  let root: string;
  beforeAll(() => {
    root = mkdtempSync(path.join(tmpdir(), 'agentyard-codex-'));
  });
  afterAll(() => {
    rmSync(root, { recursive: true, force: true });
  });

  it('reads back the MCP servers of the config.toml the adapter writes', async () => {
    const id = newId('exe');
    const ws = await createWorkspace(root, id);
    const invocation = await codexHarness.prepare({
      assignment: assignment(id),
      workspace: ws,
      bin: CODEX,
      extraArgs: [],
      prompt: 'Say hello.',
    });
    const version = spawnSync(CODEX, ['--version'], { encoding: 'utf8' });
    expect(version.status).toBe(0);
    expect(version.stdout).toMatch(/^codex-cli \d+\.\d+/);
    const listed = spawnSync(CODEX, ['mcp', 'list', '--json'], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH, HOME: ws.home, ...invocation.env },
    });
    expect(listed.status, listed.stderr).toBe(0);
    const servers = JSON.parse(listed.stdout) as { name: string; transport: Record<string, unknown> }[];
    expect(Object.fromEntries(servers.map((s) => [s.name, s.transport]))).toEqual({
      'git hub': expect.objectContaining({
        type: 'stdio',
        command: 'gh-mcp',
        args: ['--stdio', 'a b'],
        env: { GH_HOST: 'github.example.com', QUOTE: 'x"y\\z' },
      }),
      docs: expect.objectContaining({
        type: 'streamable_http',
        url: 'https://mcp.example.com/mcp',
        http_headers: { 'X-Team': 'a' },
      }),
    });
  });

  it('accepts the command line, the stdin prompt and (strictly) the configuration: a thread and a turn start', async () => {
    const id = newId('exe');
    const ws = await createWorkspace(root, id);
    const invocation = await codexHarness.prepare({
      assignment: assignment(id),
      workspace: ws,
      bin: CODEX,
      extraArgs: [],
      prompt: 'Say hello.',
    });
    expect(invocation.args[0]).toBe('exec');
    // --strict-config: an unknown or misspelt field in our config.toml would stop it here
    const args = ['exec', '--strict-config', ...invocation.args.slice(1)];
    const child = spawn(CODEX, args, {
      cwd: ws.dir,
      env: { PATH: process.env.PATH, HOME: ws.home, ...invocation.env },
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.stdin.end(invocation.input);
    const parser = codexHarness.parser();
    const types: string[] = [];
    const events: { type: string; data: Record<string, unknown> }[] = [];
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no turn.started; stderr: ${stderr}`)), 60_000);
      createInterface({ input: child.stdout }).on('line', (line) => {
        types.push(JSON.parse(line).type);
        events.push(...parser.line(line));
        if (types.includes('turn.started')) {
          clearTimeout(timer);
          resolve();
        }
      });
      void exited.then((code) => {
        if (!types.includes('turn.started')) reject(new Error(`codex exited ${code} before a turn: ${stderr}`));
      });
    });
    killQuietly(child.pid, 'SIGKILL', { group: true });
    await exited;
    expect(types.slice(0, 1)).toEqual(['thread.started']);
    expect(events[0]).toMatchObject({
      type: 'session',
      data: { session_id: expect.stringMatching(/^[0-9a-f-]{36}$/) },
    });
    expect(stderr).not.toMatch(/unknown configuration field|Error loading config/);
  });
});

describe('a run executed by the real Codex CLI', () => {
  let s: ExecServer;
  beforeAll(async () => {
    s = await startExecServer(ENGINES[0]!, {
      settings: {
        harnesses: ['codex'],
        defaultHarness: 'codex',
        bins: { claude: 'claude', codex: CODEX, gemini: 'gemini', command: '' },
      },
    });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('starts a thread (its id recorded as the session) and is cancelled mid-turn', async () => {
    const runId = await createRun(s, {
      prompt: 'Say hello.',
      config: { harness: { type: 'codex', model_id: 'gpt-5-codex' }, base_prompt: 'Be terse.' },
    });
    await waitForState(s, runId, ['INPROGRESS'], 30_000);
    const session = await whenRunsTold(
      s,
      'the thread',
      async () => (await eventsOf(s, runId)).find((e) => e.type === 'session'),
      60_000,
    );
    expect(session.data.session_id).toMatch(/^[0-9a-f-]{36}$/);
    const [execution] = await executionsOf(s, runId);
    expect((await s.api('POST', `/agent/runs/${runId}/cancel`)).status).toBe(200);
    await whenRunsTold(
      s,
      'the execution to end',
      async () => (await executionsOf(s, runId))[0]!.ended_at !== null,
      20_000,
    );
    const ended = (await executionsOf(s, runId))[0]!;
    expect(ended).toMatchObject({ id: execution!.id, outcome: 'cancelled', agent_session_id: session.data.session_id });
    expect((await s.api('GET', `/agent/runs/${runId}`)).body.state).toBe('CANCELLED');
    // nothing of the codex process tree is left: no process has the workspace as its working directory
    const { readdirSync, readlinkSync } = await import('node:fs');
    const inWorkspace = readdirSync('/proc')
      .filter((p) => /^\d+$/.test(p))
      .filter((p) => {
        try {
          return readlinkSync(`/proc/${p}/cwd`) === ended.workspace && pidAlive(Number(p));
        } catch {
          return false;
        }
      });
    expect(inWorkspace).toEqual([]);
  });
});
