/**
 * Scorers judge sampled finished runs of the agents they list: the built-in agent does the runs and a judge
 * answers, both on a stand-in OpenAI-compatible endpoint reached through the `openai` client. Sampling at 100%
 * and 0.01%, labels mapped to scores, `passed`, an unparsable judge (retried once, then unscored), the
 * statistics API, the Prometheus series, and a foreman run when a self-improving scorer falls below its
 * passing score.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampled } from '../../src/scoring/sampling.ts';
import { parseJudgeReply } from '../../src/scoring/judge.ts';
import { SCORES_RECORDED_TOPIC } from '../../src/kernel/topics.ts';
import { fastSettings, waitForState } from '../execution/support.ts';
import { waitForCreatedRun } from '../support/run-events.ts';
import { afterPasses, whenTold } from '../support/signals.ts';
import { startOpenAiStandin, textOf } from '../support/openai-standin.ts';
import type { OpenAiStandin, StandinReply, StandinRequest } from '../support/openai-standin.ts';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';

const KEY = 'sk-judge-standin-0123456789';
const RUBRIC = 'Did the agent finish the task it was given? Judge the RUBRIC-MARKER result.';

const FILES: Record<string, string> = {
  'factory.yaml': `name: Scored
repositories:
  - {owner: acme, name: api}
agentDefaults:
  harness: {type: agentyard, model: auto}
  runner: linux
`,
  'runners/linux.yaml': 'platform:\n  linux:\n    dockerImage: node:24\n',
  'agents/foreman/agent.md': '---\nagentType: FOREMAN\n---\nLead the factory.\n',
  'agents/coder/agent.md': '---\ndescription: Writes code.\n---\nWrite code.\n',
  'agents/helper/agent.md': '---\ndescription: Helps.\n---\nHelp.\n',
  'scorers/quality/scorer.md': `---
agents: [coder]
labels:
  - {value: good, score: 1, description: The task is done}
  - {value: ok, score: 0.5, description: Partly done}
  - {value: bad, score: 0, description: Not done}
passingScore: 0.7
model: auto
samplingRate: 100
---
${RUBRIC}
`,
  'scorers/rare/scorer.md': `---
agents: [foreman]
labels:
  - {value: pass, score: 1}
  - {value: fail, score: 0}
passingScore: 0.5
model: judge-model
samplingRate: 0.01
---
Rarely judged.
`,
  'scorers/improve/scorer.md': `---
agents: [helper]
labels:
  - {value: pass, score: 1}
  - {value: fail, score: 0}
passingScore: 0.5
model: judge-model
samplingRate: 100
selfImprovement: true
---
Judge the helper.
`,
};

function isJudge(req: StandinRequest): boolean {
  return textOf(req.messages[0]).startsWith("You are a judge of an AI agent's work");
}

/** The run prompt inside a judge request's material. */
function judgedPrompt(req: StandinRequest): string {
  return textOf(req.messages[1]).split('## Prompt\n')[1]?.split('\n')[0] ?? '';
}

function judgeReply(req: StandinRequest): StandinReply {
  const prompt = judgedPrompt(req);
  const tries = req.messages.filter((m) => m.role === 'assistant').length;
  const verdict = /JUDGE:(\w+)/.exec(prompt)?.[1] ?? 'good';
  if (verdict === 'garbage') return { content: 'I think it went fine, more or less.' };
  if (verdict === 'fixed' && tries === 0) return { content: '{"label": "excellent", "reason": "great"}' };
  const label = verdict === 'fixed' ? 'good' : verdict;
  return {
    content: `\`\`\`json\n{"label": "${label}", "reason": "judged ${label} for ${prompt}"}\n\`\`\``,
    usage: { prompt_tokens: 300, completion_tokens: 12 },
  };
}

describe.each(ENGINES)('scorers on %s', (engine) => {
  let s: TestServer;
  let model: OpenAiStandin;
  let factoryId: string;

  beforeAll(async () => {
    model = await startOpenAiStandin((req) => {
      if (isJudge(req)) return judgeReply(req);
      const prompt = textOf(req.messages.find((m) => m.role === 'user'));
      if (!req.messages.some((m) => m.role === 'tool'))
        return { toolCalls: [{ name: 'shell', arguments: '{"command":"echo working-on-it"}' }] };
      return { content: `Finished: ${prompt}` };
    });
    s = await startTestServer(engine, {
      compose: {
        execution: {
          env: {},
          settings: fastSettings({
            harnesses: ['agentyard'],
            defaultHarness: 'agentyard',
            builtin: {
              baseUrl: model.baseUrl,
              apiKey: KEY,
              model: 'local-model',
              maxTurns: 10,
              deadlineMs: 60_000,
              requestTimeoutMs: 30_000,
            },
          }),
        },
        scoring: {
          judge: { baseUrl: model.baseUrl, apiKey: KEY, defaultModel: 'local-judge', timeoutMs: 20_000 },
          settleMs: 50,
          pollIntervalMs: 200,
          window: 3,
        },
      },
    });
    const factory = await s.api('POST', '/factories', { name: 'scored', source: { type: 'managed' } });
    expect(factory.status, factory.text).toBe(201);
    factoryId = factory.body.id;
    const applied = await s.api('POST', `/factories/${factoryId}/apply`, {
      files: Object.entries(FILES).map(([path, content]) => ({ path, content })),
      message: 'scorers',
    });
    expect(applied.status, applied.text).toBe(200);
    expect(JSON.stringify(applied.body)).not.toContain('no run is scored');
  });
  afterAll(async () => {
    await s?.close();
    await model?.close();
  });

  async function runOf(agent: string, prompt: string): Promise<string> {
    const res = await s.api('POST', `/factories/${factoryId}/runs`, { prompt, config: { name: agent } });
    expect(res.status, res.text).toBe(200);
    const run = await waitForState(s, res.body.run_id, ['SUCCEEDED', 'FAILED', 'ERROR']);
    expect(run.state, JSON.stringify(run.status_message)).toBe('SUCCEEDED');
    return res.body.run_id;
  }

  async function scoresOf(runId: string, n = 1): Promise<any[]> {
    return whenTold(
      s.server.ctx.bus,
      [SCORES_RECORDED_TOPIC],
      async () => {
        const res = await s.api('GET', `/agent/runs/${runId}/scores`);
        expect(res.status).toBe(200);
        return res.body.scores.length >= n ? res.body.scores : undefined;
      },
      { what: `${n} score(s) of ${runId}` },
    );
  }

  it('judges every run of a listed agent at 100%, the rubric in the judge request, the label mapped to its score', async () => {
    const runId = await runOf('coder', 'JUDGE:good write the parser');
    const [score] = await scoresOf(runId);
    expect(score).toMatchObject({
      scorer: 'quality',
      label: 'good',
      score: 1,
      passed: true,
      status: 'scored',
      agent: 'coder',
      judge_model: 'local-judge',
      usage: { input_tokens: 300, output_tokens: 12, requests: 1 },
    });
    expect(score.reason).toBe('judged good for JUDGE:good write the parser');
    const request = model.requests.find((r) => isJudge(r) && judgedPrompt(r).includes('write the parser'))!;
    expect(textOf(request.messages[0])).toContain(RUBRIC);
    expect(request.model).toBe('local-judge');
    expect(request.authorization).toBe(`Bearer ${KEY}`);
    // the judge sees the prompt, the transcript with the tool's output, and the result
    const material = textOf(request.messages[1]);
    expect(material).toContain('[tool result shell: completed]');
    expect(material).toContain('working-on-it');
    expect(material).toContain('## Result\nFinished: JUDGE:good write the parser');
  });

  it('maps each label to its score and passes only at or above the passing score', async () => {
    const ok = await runOf('coder', 'JUDGE:ok half done');
    const bad = await runOf('coder', 'JUDGE:bad nothing done');
    expect((await scoresOf(ok))[0]).toMatchObject({ label: 'ok', score: 0.5, passed: false });
    expect((await scoresOf(bad))[0]).toMatchObject({ label: 'bad', score: 0, passed: false });
  });

  it('asks an unreadable judge once more, then records the run unscored with the reason', async () => {
    const fixed = await runOf('coder', 'JUDGE:fixed second try');
    expect((await scoresOf(fixed))[0]).toMatchObject({ label: 'good', passed: true, usage: { requests: 2 } });
    const garbage = await runOf('coder', 'JUDGE:garbage unreadable');
    const [score] = await scoresOf(garbage);
    expect(score).toMatchObject({ status: 'unscored', label: null, score: null, passed: null });
    expect(score.reason).toContain('could not be read twice: the reply is not a JSON object');
    expect(model.requests.filter((r) => isJudge(r) && judgedPrompt(r).includes('unreadable'))).toHaveLength(2);
  });

  it('samples at 0.01%: a run is judged only when its hash falls in the sample', async () => {
    const runIds = [await runOf('foreman', 'foreman one'), await runOf('foreman', 'foreman two')];
    // the scan has looked at them once the factory's cursor passed their end
    await afterPasses(
      s.server.services.scoring!.loop,
      async () => {
        const res = await s.server.ctx.db.query<{ passed: boolean }>(
          `SELECT c.scanned_to >= max(r.updated_at) AS passed FROM scoring_cursors c, runs r
          WHERE c.factory_id = $1 AND r.id = ANY($2) GROUP BY c.scanned_to`,
          [factoryId, runIds],
        );
        return res.rows[0]?.passed === true;
      },
      { what: 'the scan to pass the runs' },
    );
    for (const runId of runIds) {
      const jobs = await s.server.ctx.db.query('SELECT 1 FROM scoring_jobs WHERE run_id = $1', [runId]);
      expect(jobs.rows.length).toBe(sampled(runId, 'rare', 0.01) ? 1 : 0);
    }
  });

  it('answers statistics per day and agent, and Prometheus series', async () => {
    const res = await s.api('GET', '/agent/scores?agent=coder&scorer=quality');
    expect(res.status, res.text).toBe(200);
    const total = res.body.totals.find((t: { scorer: string }) => t.scorer === 'quality');
    expect(total).toMatchObject({ agent: 'coder', samples: 5, scored: 4, passed: 2, pass_rate: 0.5 });
    expect(total.mean_score).toBeCloseTo((1 + 0.5 + 0 + 1) / 4);
    expect(res.body.days).toHaveLength(1);
    expect(res.body.days[0].day).toBe(new Date().toISOString().slice(0, 10));
    expect((await s.api('GET', '/agent/scores?since=yesterday')).status).toBe(400);
    expect((await s.api('GET', '/agent/runs/run_doesnotexist/scores')).status).toBe(404);
    const metrics = await fetch(`${s.url}/metrics`);
    const text = await metrics.text();
    expect(text).toMatch(/agentyard_run_scores_total\{[^}]*scorer="quality"[^}]*status="scored"[^}]*\} \d/);
    expect(text).toContain('agentyard_judge_tokens_total{direction="input"}');
    expect(text).toContain('agentyard_scoring_jobs_pending');
  });

  it('shows a run’s scores on its console page, and each agent’s pass rate on its page', async () => {
    const signIn = await fetch(`${s.url}/console/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ api_key: s.adminKey }).toString(),
      redirect: 'manual',
    });
    const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
    const get = async (path: string) => {
      const res = await fetch(`${s.url}${path}`, { headers: { cookie } });
      expect(res.status, path).toBe(200);
      return res.text();
    };
    const scored = (await s.api('GET', '/agent/scores?agent=coder')).body;
    expect(scored.totals.length).toBeGreaterThan(0);
    const runId = (
      await s.server.ctx.db.query<{ run_id: string }>(`SELECT run_id FROM run_scores WHERE label = 'ok' LIMIT 1`)
    ).rows[0]!.run_id;
    const runPage = await get(`/console/runs/${runId}`);
    expect(runPage).toContain('id="run-scores"');
    expect(runPage).toMatch(/<th scope="row">quality<\/th><td>ok<\/td><td>0.5<\/td><td>no<\/td>/);
    const factoryPage = await get(`/console/factories/${factoryId}`);
    expect(factoryPage).toContain(`href="/console/factories/${factoryId}/agents/coder"`);
    const agentPage = await get(`/console/factories/${factoryId}/agents/coder`);
    expect(agentPage).toContain('<svg role="img"');
    expect(agentPage).toContain('Pass rate per day by scorer');
    expect(agentPage).toMatch(/<td>quality<\/td><td>5<\/td><td>2<\/td><td>50%<\/td>/);
  });

  it('gives the foreman a run with the failing reasons when a self-improving scorer falls below its passing score', async () => {
    const helperRuns = [];
    for (const word of ['alpha', 'beta', 'gamma']) helperRuns.push(await runOf('helper', `JUDGE:fail helper ${word}`));
    for (const runId of helperRuns)
      expect((await scoresOf(runId))[0]).toMatchObject({ scorer: 'improve', passed: false });
    const improvement = await waitForCreatedRun(
      s.server.ctx.bus,
      async () => {
        const res = await s.server.ctx.db.query<{ id: string; prompt: string; config_name: string }>(
          `SELECT id, prompt, config_name FROM runs WHERE metadata->>'agentyard_scorer' = 'improve'`,
        );
        return res.rows[0];
      },
      { what: 'the improvement run' },
    );
    expect(improvement.config_name).toBe('foreman');
    expect(improvement.prompt).toContain('pass rate is 0%, below its passing score of 50%');
    for (const runId of helperRuns) expect(improvement.prompt).toContain(runId);
    expect(improvement.prompt).toContain('judged fail for JUDGE:fail helper beta');
  });
});

describe('sampling and reading a judge', () => {
  it('samples about the rate it is given, the same way every time', () => {
    const ids = Array.from({ length: 200_000 }, (_, i) => `run_${i}`);
    const rare = ids.filter((id) => sampled(id, 'q', 0.01)).length;
    expect(rare).toBeGreaterThan(5);
    expect(rare).toBeLessThan(45);
    expect(ids.slice(0, 1000).every((id) => sampled(id, 'q', 100))).toBe(true);
    const half = ids.slice(0, 10_000).filter((id) => sampled(id, 'q', 50)).length;
    expect(half).toBeGreaterThan(4_700);
    expect(half).toBeLessThan(5_300);
    expect(sampled('run_1', 'q', 25)).toBe(sampled('run_1', 'q', 25));
  });

  it('reads a label from fenced or chatty JSON, case-insensitively, and says why it cannot', () => {
    const labels = [
      { value: 'Good', score: 1, description: null },
      { value: 'bad', score: 0, description: null },
    ];
    expect(parseJudgeReply('Sure! {"label": "good", "reason": "fine"} Hope that helps.', labels)).toEqual({
      label: labels[0],
      reason: 'fine',
    });
    expect(parseJudgeReply('{"label": "meh"}', labels)).toEqual({ problem: 'the label "meh" is not one of Good, bad' });
    expect(parseJudgeReply('{"reason": "x"}', labels)).toEqual({ problem: 'the reply has no "label"' });
    expect(parseJudgeReply('no json', labels)).toEqual({ problem: 'the reply is not a JSON object' });
  });
});
