/**
 * A run's budgets: `config.max_duration_seconds` ends a sleeping agent within 2 s of its budget, FAILED with
 * `budget_exceeded`, its partial output and workspace kept; `config.max_turns` reaches Claude Code as
 * `--max-turns`. Bad values are refused with the field named.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENTS, createRun, eventsOf, executionsOf, fakeRecords, startExecServer, waitForState } from './support.ts';
import type { ExecServer } from './support.ts';

describe('run budgets', () => {
  let s: ExecServer;
  beforeAll(async () => {
    s = await startExecServer('pglite', {
      settings: { bins: { ...(await import('./support.ts')).FAKE, command: path.join(AGENTS, 'sleeper.sh') } },
    });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('ends a sleeping agent FAILED with budget_exceeded within 2 s of its deadline, keeping its work', async () => {
    const began = Date.now();
    const runId = await createRun(s, {
      prompt: 'sleep',
      config: { harness: { type: 'command' }, max_duration_seconds: 2 },
    });
    const run = await waitForState(s, runId, ['SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED'], 20_000);
    const elapsed = Date.now() - began;
    expect(run.state).toBe('FAILED');
    expect(elapsed).toBeLessThan(2_000 + 2_000);
    expect(run.status_message).toMatchObject({ error_code: 'budget_exceeded', error_detail: 'max_duration_exceeded' });
    expect(run.status_message.message).toMatch(/budget_exceeded.*2 s \(max_duration_seconds\)/);
    const events = await eventsOf(s, runId);
    expect(events.some((e) => e.type === 'message' && e.data.text === 'started')).toBe(true);
    const [execution] = await executionsOf(s, runId);
    expect(existsSync(execution!.workspace!)).toBe(true);
    expect(readFileSync(path.join(execution!.workspace!, 'partial.txt'), 'utf8')).toBe('partial work\n');
  });

  it('passes max_turns to Claude Code as --max-turns', async () => {
    const runId = await createRun(s, { prompt: 'hello', config: { harness: { type: 'claude' }, max_turns: 7 } });
    await waitForState(s, runId, ['SUCCEEDED', 'FAILED', 'ERROR']);
    const [execution] = await executionsOf(s, runId);
    const [record] = fakeRecords(execution!.workspace!);
    const args: string[] = record.argv;
    expect(args[args.indexOf('--max-turns') + 1]).toBe('7');
  });

  it('refuses a budget that is not a positive integer, naming the field', async () => {
    for (const bad of [0, -1, 1.5, 'ten']) {
      const res = await s.api('POST', '/agent/runs', { prompt: 'x', config: { max_duration_seconds: bad } });
      expect(res.status, String(bad)).toBe(400);
      expect(res.text).toMatch(/max_duration_seconds/);
    }
  });
});

describe('max_turns and the built-in agent', () => {
  it('lowers the built-in agent’s max turns to the run’s, never raises it', async () => {
    const { agentyardHarness } = await import('../../src/execution/harnesses/agentyard.ts');
    const { mkdtempSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const workspace = { dir: mkdtempSync(path.join(tmpdir(), 'ay-budget-')) } as never;
    const turnsFor = async (config: Record<string, unknown>): Promise<number> => {
      const assignment = {
        runId: 'run_1',
        executionId: 'exe_1',
        mcpServers: {},
        modelId: undefined,
        basePrompt: undefined,
        resumeSessionId: undefined,
        runPrompt: 'p',
        secretEnv: {},
        run: { config },
      } as never;
      const builtin = { baseUrl: 'http://model.test/v1', maxTurns: 100, deadlineMs: 60_000, requestTimeoutMs: 1_000 };
      const invocation = await agentyardHarness.prepare({
        assignment,
        workspace,
        bin: '',
        extraArgs: [],
        prompt: 'p',
        builtin: builtin as never,
      });
      return JSON.parse(invocation.input!).max_turns;
    };
    expect(await turnsFor({ max_turns: 5 })).toBe(5);
    expect(await turnsFor({ max_turns: 500 })).toBe(100);
    expect(await turnsFor({})).toBe(100);
  });
});
