/**
 * The contract of the built-in agent, on a real `agentyard serve` process configured by its environment only:
 * AGENTYARD_HARNESSES=agentyard with AGENTYARD_OPENAI_BASE_URL (ending in /v1) and AGENTYARD_OPENAI_API_KEY runs
 * a run that names no harness (`model: auto` sent as AGENTYARD_OPENAI_MODEL) on the built-in agent; the shell
 * tool's output shows in the run's events and the final answer is the run's `result`; a scorer of the factory
 * judges it with the same endpoint, the rubric in the judge's request, and `/scores` answers the judgement.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnAgentyard } from '../support/agentyard-process.ts';
import type { AgentyardProcess } from '../support/agentyard-process.ts';
import { startOpenAiStandin, textOf } from '../support/openai-standin.ts';
import type { OpenAiStandin } from '../support/openai-standin.ts';
import { TEST_MASTER_KEY } from '../support/server.ts';

const ADMIN = `ay_${'c'.repeat(40)}`;
const KEY = 'sk-contract-0123456789abcdef';
const RUBRIC = 'CONTRACT-RUBRIC: the agent must print the greeting.';

describe('agentyard serve with AGENTYARD_HARNESSES=agentyard', () => {
  let model: OpenAiStandin;
  let serve: AgentyardProcess;
  let url: string;
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${url}/api/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    return { status: res.status, body: (await res.json()) as any };
  };

  beforeAll(async () => {
    model = await startOpenAiStandin((req) => {
      if (textOf(req.messages[0]).startsWith("You are a judge of an AI agent's work"))
        return { content: '{"label": "yes", "reason": "it printed the greeting"}' };
      if (!req.messages.some((m) => m.role === 'tool'))
        return { toolCalls: [{ name: 'shell', arguments: '{"command": "echo contract-greeting"}' }] };
      return { content: 'The shell printed contract-greeting.' };
    });
    serve = spawnAgentyard(['serve', '--host', '127.0.0.1', '--port', '0'], {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      AGENTYARD_MASTER_KEY: TEST_MASTER_KEY,
      AGENTYARD_BOOTSTRAP_API_KEY: ADMIN,
      LOG_LEVEL: 'info',
      AGENTYARD_HARNESSES: 'agentyard',
      AGENTYARD_OPENAI_BASE_URL: model.baseUrl,
      AGENTYARD_OPENAI_API_KEY: KEY,
      AGENTYARD_OPENAI_MODEL: 'contract-model',
      AGENTYARD_SCORING_SETTLE_MS: '100',
      AGENTYARD_SCORING_POLL_MS: '200',
    });
    url = (await serve.printed(/Agentyard listening on (http:\/\/\S+?) /, 'the server to listen'))[1]!;
  });
  afterAll(async () => {
    await serve?.stop();
    await model?.close();
  });

  it('runs a run that names no harness on the built-in agent, and scores it', async () => {
    const factory = await api('POST', '/factories', { name: 'contract', source: { type: 'managed' } });
    expect(factory.status).toBe(201);
    const files = {
      'factory.yaml':
        'name: Contract\nrepositories:\n  - {owner: acme, name: api}\nagentDefaults:\n  model: auto\n  runner: linux\n',
      'runners/linux.yaml': 'platform:\n  linux:\n    dockerImage: node:24\n',
      'agents/foreman/agent.md': '---\nagentType: FOREMAN\n---\nLead.\n',
      'scorers/greets/scorer.md': `---\nagents: [foreman]\nlabels:\n  - {value: "yes", score: 1}\n  - {value: "no", score: 0}\npassingScore: 1\nmodel: auto\nsamplingRate: 100\n---\n${RUBRIC}\n`,
    };
    const applied = await api('POST', `/factories/${factory.body.id}/apply`, {
      files: Object.entries(files).map(([path, content]) => ({ path, content })),
    });
    expect(applied.status).toBe(200);
    const created = await api('POST', `/factories/${factory.body.id}/runs`, { prompt: 'Say the greeting.' });
    expect(created.status).toBe(200);
    const runId = created.body.run_id as string;
    // the run's event stream ends (an `end` event) once the run is finished: the server says when
    const followed = await fetch(`${url}/api/v1/agent/runs/${runId}/events`, {
      headers: { authorization: `Bearer ${ADMIN}` },
      signal: AbortSignal.timeout(60_000),
    });
    expect(await followed.text()).toMatch(/^event: end$/m);
    const run = (await api('GET', `/agent/runs/${runId}`)).body;
    expect(run.state, JSON.stringify(run.status_message)).toBe('SUCCEEDED');
    expect(run.result).toBe('The shell printed contract-greeting.');
    // the run's event stream (server-sent events) carries the shell tool's output
    const stream = await fetch(`${url}/api/v1/agent/runs/${runId}/events?follow=false`, {
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    const shell = (await stream.text())
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => JSON.parse(l.slice(6)))
      .find((e) => e.type === 'tool_result' && (e.data ?? e).name === 'shell');
    expect(JSON.stringify(shell)).toContain('contract-greeting');
    const agentRequests = model.requests.filter((r) => r.stream);
    expect(agentRequests[0]!.model).toBe('contract-model');
    expect(agentRequests[0]!.authorization).toBe(`Bearer ${KEY}`);

    await serve.printed(new RegExp(`"run_id":"${runId}".*"msg":"run scored"`), 'the judgement');
    const scores = (await api('GET', `/agent/runs/${runId}/scores`)).body.scores;
    expect(scores).toEqual([
      expect.objectContaining({
        scorer: 'greets',
        label: 'yes',
        score: 1,
        passed: true,
        reason: 'it printed the greeting',
      }),
    ]);
    const judge = model.requests.find((r) => !r.stream)!;
    expect(textOf(judge.messages[0])).toContain(RUBRIC);
  });
});
