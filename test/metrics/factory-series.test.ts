/**
 * The Prometheus series per factory and automation, scraped from `/metrics` after real runs (the fake Claude
 * Code reports 100 input and 20 output tokens and $0.0125 per run): run endings by state, tokens by direction,
 * cost; labelled by factory id and automation name only ("" for runs of no automation); a run past its cost
 * budget counts as FAILED; runs of no factory add no series.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { waitEvaluated } from '../automations/support.ts';
import { startExecServer, waitForState, whenRunsTold } from '../execution/support.ts';
import type { ExecServer } from '../execution/support.ts';
import { post } from '../ingress/support.ts';
import { managedFactory } from '../orchestration/support.ts';

const FILES = {
  'factory.yaml': `schemaVersion: v1alpha1
name: metered
repositories:
  - owner: acme
    name: api
agentDefaults:
  harness: {type: claude, model: opus, auth: {source: managedSecret, secretName: anthropic}}
  runner: default
`,
  'agents/foreman/agent.md': '---\nagentType: FOREMAN\n---\n\nYou work.\n',
  'runners/default.yaml': 'platform:\n  os: linux\n  linux:\n    dockerImage: node:24-bookworm\n',
  'webhooks/alerts.yaml': 'authMode: token\nsecretName: alerts-token\n',
  'automations/alerts/automation.md':
    '---\ntriggers:\n  - provider: webhook\n    event: received\n    filter:\n      webhook_ids: [alerts]\n---\n\nLook.\n',
  'automations/stingy/automation.md':
    '---\nbudget: {maxCostUsd: 0.01}\ntriggers:\n  - provider: webhook\n    event: received\n    filter:\n      webhook_ids: [alerts]\n---\n\nLook cheaply.\n',
};

/** The samples of a metric: labels → value. */
function samples(text: string, name: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = line.match(/^(\w+)(\{[^}]*\})? (\S+)$/);
    if (m && m[1] === name) out.set(m[2] ?? '', Number(m[3]));
  }
  return out;
}

describe.each(ENGINES)('factory and automation series on /metrics, %s', (engine) => {
  let s: ExecServer;
  beforeAll(async () => {
    s = await startExecServer(engine);
    await s.api('PUT', '/secrets/anthropic', { value: 'sk-metrics-0123456789' });
    await s.api('PUT', '/secrets/alerts-token', { value: 'alerts-token-0123456789' });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('counts runs by final state, tokens and cost per factory and automation', async () => {
    const factoryId = await managedFactory(s, 'metered', FILES);
    const runIds: string[] = [];
    for (const i of [1, 2]) {
      const res = await s.api('POST', `/factories/${factoryId}/runs`, { prompt: `task ${i}` });
      expect(res.status, res.text).toBe(200);
      runIds.push(res.body.run_id);
    }
    const [hook] = (await s.api('GET', `/factories/${factoryId}/webhooks`)).body.webhooks;
    const delivery = await post(hook.ingress_url, '{"alert":1}', {
      'content-type': 'application/json',
      authorization: 'Bearer alerts-token-0123456789',
    });
    expect(delivery.status, delivery.text).toBe(202);
    await waitEvaluated(s, [delivery.body.delivery_id]);
    const automationRuns = await s.server.ctx.db.query<{ id: string }>('SELECT id FROM runs WHERE delivery_id = $1', [
      delivery.body.delivery_id,
    ]);
    runIds.push(...automationRuns.rows.map((r) => r.id));
    expect(runIds).toHaveLength(4);
    await createRunOfNoFactory(s);
    for (const id of runIds) await waitForState(s, id, ['SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED']);

    const f = `factory_id="${factoryId}"`;
    const text = await whenRunsTold(s, 'the series of four ended runs', async () => {
      const body = await (await fetch(`${s.url}/metrics`)).text();
      const runs = samples(body, 'agentyard_factory_runs_total');
      const total = [...runs.values()].reduce((a, b) => a + b, 0);
      return total === 4 ? body : undefined;
    });
    const runs = samples(text, 'agentyard_factory_runs_total');
    expect(runs.get(`{${f},automation="",state="SUCCEEDED"}`)).toBe(2);
    expect(runs.get(`{${f},automation="alerts",state="SUCCEEDED"}`)).toBe(1);
    expect(runs.get(`{${f},automation="stingy",state="FAILED"}`)).toBe(1);
    const tokens = samples(text, 'agentyard_factory_tokens_total');
    expect(tokens.get(`{${f},automation="",direction="input"}`)).toBe(200);
    expect(tokens.get(`{${f},automation="",direction="output"}`)).toBe(40);
    expect(tokens.get(`{${f},automation="alerts",direction="input"}`)).toBe(100);
    expect(tokens.get(`{${f},automation="stingy",direction="output"}`)).toBe(20);
    const cost = samples(text, 'agentyard_factory_cost_usd_total');
    expect(cost.get(`{${f},automation=""}`)).toBeCloseTo(0.025, 10);
    expect(cost.get(`{${f},automation="alerts"}`)).toBeCloseTo(0.0125, 10);
    expect(cost.get(`{${f},automation="stingy"}`)).toBeCloseTo(0.0125, 10);
    // only factory ids and automation names as labels: one factory, three automation values
    const labelSets = [...runs.keys(), ...tokens.keys(), ...cost.keys()];
    for (const labels of labelSets)
      expect(labels).toMatch(/^\{factory_id="fac_[^"]+",automation="[^"]*"(,\w+="\w+")?\}$/);
    expect(new Set(labelSets.map((l) => l.match(/factory_id="([^"]+)"/)![1]))).toEqual(new Set([factoryId]));
  });
});

async function createRunOfNoFactory(s: ExecServer): Promise<void> {
  const res = await s.api('POST', '/agent/runs', { prompt: 'no factory', config: { harness: { type: 'claude' } } });
  expect(res.status, res.text).toBe(200);
  await waitForState(s, res.body.run_id, ['SUCCEEDED', 'FAILED', 'ERROR']);
}
