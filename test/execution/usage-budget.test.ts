/**
 * A run's usage budgets: `config.max_tokens` and `config.max_cost_usd` end the run FAILED with `budget_exceeded`
 * naming the budget, as the harness reports usage: the `command` harness's own `usage` events, Claude Code's
 * stream-json `result` (its `total_cost_usd`), the built-in agent's model usage (its stand-in endpoint). The partial output and the workspace are kept, the usage up to the
 * stop is recorded on the run. Bad values are refused with the field named.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageBefore, usageBudgetPassed } from '../../src/execution/usage-budget.ts';
import { firstUser } from '../support/openai-standin.ts';
import type { OpenAiStandin } from '../support/openai-standin.ts';
import {
  AGENTS,
  FAKE,
  createRun,
  eventsOf,
  executionsOf,
  startBuiltinAgentServer,
  startExecServer,
  waitForState,
  whenRunsTold,
} from './support.ts';
import type { BuiltinAgentServer, ExecServer } from './support.ts';

const FINAL = ['SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED'];

describe('usage budgets of a run', () => {
  let s: ExecServer;
  beforeAll(async () => {
    s = await startExecServer('pglite', {
      settings: { bins: { ...FAKE, command: path.join(AGENTS, 'spender.sh') } },
    });
    await s.api('PUT', '/secrets/anthropic', { value: 'sk-budget-0123456789' });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('stops a command agent past max_tokens: FAILED, budget_exceeded naming tokens, work kept', async () => {
    // spender.sh reports 500 tokens per usage line, four lines, then sleeps for two minutes
    const runId = await createRun(s, { prompt: 'spend', config: { harness: { type: 'command' }, max_tokens: 1200 } });
    const run = await waitForState(s, runId, FINAL, 20_000);
    expect(run.state).toBe('FAILED');
    expect(run.status_message).toMatchObject({ error_code: 'budget_exceeded', error_detail: 'max_tokens_exceeded' });
    expect(run.status_message.message).toBe(
      'budget_exceeded: the run used 1500 tokens, past its token budget of 1200 (max_tokens)',
    );
    const events = await eventsOf(s, runId);
    expect(events.some((e) => e.type === 'message' && e.data.text === 'working')).toBe(true);
    expect(events.filter((e) => e.type === 'usage').length).toBeGreaterThanOrEqual(3);
    const [execution] = await executionsOf(s, runId);
    expect(readFileSync(path.join(execution!.workspace!, 'partial.txt'), 'utf8')).toBe('partial work\n');
    expect(run.request_usage.total_tokens).toBeGreaterThanOrEqual(1500);
  });

  it('stops a command agent past max_cost_usd, naming the cost budget', async () => {
    const runId = await createRun(s, {
      prompt: 'spend',
      config: { harness: { type: 'command' }, max_cost_usd: 0.05 },
    });
    const run = await waitForState(s, runId, FINAL, 20_000);
    expect(run.state).toBe('FAILED');
    expect(run.status_message).toMatchObject({ error_code: 'budget_exceeded', error_detail: 'max_cost_exceeded' });
    expect(run.status_message.message).toBe(
      'budget_exceeded: the run cost $0.0600, past its cost budget of $0.05 (max_cost_usd)',
    );
    const [execution] = await executionsOf(s, runId);
    expect(existsSync(execution!.workspace!)).toBe(true);
  });

  it('fails a Claude Code run whose reported total_cost_usd passes max_cost_usd', async () => {
    // the fake Claude Code reports total_cost_usd 0.0125 and 120 tokens in its stream-json result
    const config = { harness: { type: 'claude' }, harness_auth_secrets: { claude_auth_secret_name: 'anthropic' } };
    const over = await createRun(s, { prompt: 'hello', config: { ...config, max_cost_usd: 0.01 } });
    const run = await waitForState(s, over, FINAL);
    expect(run.state).toBe('FAILED');
    expect(run.status_message.message).toMatch(/^budget_exceeded: the run cost \$0\.0125.*\(max_cost_usd\)$/);
    const within = await createRun(s, { prompt: 'hello', config: { ...config, max_cost_usd: 0.02, max_tokens: 1000 } });
    expect((await waitForState(s, within, FINAL)).state).toBe('SUCCEEDED');
  });

  it('refuses budgets that are not positive numbers, naming the field', async () => {
    for (const [field, bad] of [
      ['max_tokens', 0],
      ['max_tokens', 1.5],
      ['max_tokens', 'many'],
      ['max_cost_usd', 0],
      ['max_cost_usd', -1],
      ['max_cost_usd', '1'],
    ] as const) {
      const res = await s.api('POST', '/agent/runs', { prompt: 'x', config: { [field]: bad } });
      expect(res.status, `${field}=${bad}`).toBe(400);
      expect(res.text).toMatch(new RegExp(field));
    }
  });
});

describe('usage budgets over the executions of a run', () => {
  let s: ExecServer;
  beforeAll(async () => {
    s = await startExecServer('pglite', {
      settings: { bins: { ...FAKE, command: path.join(AGENTS, 'spend-once.sh') } },
    });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('counts what earlier executions used: a follow-up that takes the run past max_tokens fails it', async () => {
    // each execution of spend-once.sh reports 500 tokens and succeeds
    const runId = await createRun(s, { prompt: 'spend', config: { harness: { type: 'command' }, max_tokens: 800 } });
    expect((await waitForState(s, runId, FINAL)).state).toBe('SUCCEEDED');
    const followup = await s.api('POST', `/agent/runs/${runId}/followups`, { message: 'more' });
    expect(followup.status, followup.text).toBe(200);
    const run = await whenRunsTold(s, 'the follow-up execution to end', async () => {
      const r = (await s.api('GET', `/agent/runs/${runId}`)).body;
      return (await executionsOf(s, runId)).length === 2 && FINAL.includes(r.state) ? r : undefined;
    });
    expect(run.state).toBe('FAILED');
    expect(run.status_message.message).toBe(
      'budget_exceeded: the run used 1000 tokens, past its token budget of 800 (max_tokens)',
    );
  });
});

describe('max_tokens and the built-in agent', () => {
  let server: BuiltinAgentServer;
  let s: ExecServer;
  let model: OpenAiStandin;
  beforeAll(async () => {
    // a model that never stops calling the shell, each answer 100 prompt and 20 completion tokens
    server = await startBuiltinAgentServer(
      (req) =>
        firstUser(req).includes('LOOP')
          ? {
              toolCalls: [{ name: 'shell', arguments: JSON.stringify({ command: 'echo again >> loop.txt' }) }],
              usage: { prompt_tokens: 100, completion_tokens: 20 },
            }
          : { content: 'no script' },
      { maxTurns: 50 },
    );
    ({ s, model } = server);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('stops the agent once the tokens its model reported pass the budget', async () => {
    const runId = await createRun(s, { prompt: 'LOOP forever', config: { model_id: 'auto', max_tokens: 300 } });
    const run = await waitForState(s, runId, FINAL);
    expect(run.state).toBe('FAILED');
    expect(run.status_message.message).toBe(
      'budget_exceeded: the run used 360 tokens, past its token budget of 300 (max_tokens)',
    );
    // the third answer passed it; what the agent asked while it was being stopped (the kill grace) came after
    const asked = model.requests.filter((r) => firstUser(r).includes('LOOP')).length;
    expect(asked).toBeGreaterThanOrEqual(3);
    expect(asked).toBeLessThan(50);
    const [execution] = await executionsOf(s, runId);
    expect(readFileSync(path.join(execution!.workspace!, 'loop.txt'), 'utf8')).toMatch(/^again\n/);
  });
});

describe('usageBudgetPassed', () => {
  const none = { input_tokens: 0, output_tokens: 0, cost_usd: 0 };
  it('counts the earlier executions of the run', () => {
    const before = usageBefore({ input_tokens: 700, output_tokens: 200, total_tokens: 900, inference_cost_usd: 0.4 });
    expect(before).toEqual({ total_tokens: 900, cost_usd: 0.4 });
    expect(usageBudgetPassed({ max_tokens: 1000 }, before, { ...none, input_tokens: 100 })).toBeUndefined();
    expect(usageBudgetPassed({ max_tokens: 1000 }, before, { ...none, input_tokens: 101 })).toEqual({
      message: 'budget_exceeded: the run used 1001 tokens, past its token budget of 1000 (max_tokens)',
      errorCode: 'max_tokens_exceeded',
    });
    expect(usageBudgetPassed({ max_cost_usd: 0.5 }, before, { ...none, cost_usd: 0.1 })).toBeUndefined();
    expect(usageBudgetPassed({ max_cost_usd: 0.5 }, before, { ...none, cost_usd: 0.11 })?.errorCode).toBe(
      'max_cost_exceeded',
    );
  });
  it('ignores budgets that are not positive numbers', () => {
    const used = { input_tokens: 1e9, output_tokens: 1e9, cost_usd: 1e9 };
    for (const bad of [0, -1, '5', null, Number.NaN])
      expect(usageBudgetPassed({ max_tokens: bad, max_cost_usd: bad }, undefined, used)).toBeUndefined();
  });
});
