/**
 * Daily caps on real HTTP (docs/governance.md, "Daily caps"): an agent's `budget.dailyRuns` refuses the next
 * `POST /factories/{id}/runs` with 429 `daily_cap_reached` (Retry-After: the next UTC day) and the next
 * `dispatch_agent` with a tool error; an automation's cap records its next firing as skipped, with the reason, in
 * the delivery's page and the delivery log; factory.yaml's `budget.dailyCostUsd` counts the cost the runs'
 * harness reported (the fake Claude Code's `total_cost_usd`), so runs start until the day's cost reaches it; a
 * burst of concurrent requests starts exactly the cap; a schedule past an automation's cap records why on its fire.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { runsOfDeliveries, waitEvaluated } from '../automations/support.ts';
import { startExecServer, waitForState } from '../execution/support.ts';
import { fireDueSchedules } from '../../src/schedules/fire.ts';
import type { ExecServer } from '../execution/support.ts';
import { post } from '../ingress/support.ts';
import { callTool, managedFactory, mcpClient } from '../orchestration/support.ts';

const RUNNER = 'platform:\n  os: linux\n  linux:\n    dockerImage: node:24-bookworm\n';
const factoryYaml = (name: string, budget = '') => `schemaVersion: v1alpha1
name: ${name}
repositories:
  - owner: acme
    name: api
${budget}agentDefaults:
  harness: {type: claude, model: opus, auth: {source: managedSecret, secretName: anthropic}}
  runner: default
`;
const agent = (type: string, budget = '') => `---\nagentType: ${type}\n${budget}---\n\nYou work.\n`;

describe.each(ENGINES)('daily caps on %s', (engine) => {
  let s: ExecServer;
  beforeAll(async () => {
    s = await startExecServer(engine);
    await s.api('PUT', '/secrets/anthropic', { value: 'sk-caps-0123456789' });
    await s.api('PUT', '/secrets/alerts-token', { value: 'alerts-token-0123456789' });
  });
  afterAll(async () => {
    await s?.close();
  });

  it("refuses an agent's runs past its dailyRuns: 429 on the API, a tool error for dispatch_agent", async () => {
    const factoryId = await managedFactory(s, 'runs-capped', {
      'factory.yaml': factoryYaml('runs-capped'),
      'agents/foreman/agent.md': agent('FOREMAN', 'budget: {dailyRuns: 2}\n'),
      'agents/helper/agent.md': agent('CUSTOM'),
      'runners/default.yaml': RUNNER,
    });
    for (const i of [1, 2]) {
      const ok = await s.api('POST', `/factories/${factoryId}/runs`, { prompt: `task ${i}` });
      expect(ok.status, ok.text).toBe(200);
    }
    const refused = await s.api('POST', `/factories/${factoryId}/runs`, { prompt: 'task 3' });
    expect(refused.status, refused.text).toBe(429);
    expect(refused.body).toMatchObject({
      code: 'daily_cap_reached',
      cap: 'dailyRuns',
      scope: 'agent',
      limit: 2,
      resets_at: expect.stringMatching(/T00:00:00\.000Z$/),
    });
    expect(refused.body.detail).toContain(
      'agent foreman of factory runs-capped has started 2 runs today, its daily cap (budget.dailyRuns: 2)',
    );
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(86_400);

    const client = await mcpClient(s, s.adminKey);
    try {
      const capped = await callTool(client, 'dispatch_agent', {
        factory: 'runs-capped',
        agent: 'foreman',
        prompt: 'x',
      });
      expect(capped.isError).toBe(true);
      expect(capped.text).toMatch(/Daily cap reached: agent foreman of factory runs-capped has started 2 runs today/);
      // another agent of the factory has no cap of its own
      const other = await callTool(client, 'dispatch_agent', { factory: 'runs-capped', agent: 'helper', prompt: 'x' });
      expect(other.isError, other.text).toBe(false);
    } finally {
      await client.close();
    }
    const count = await s.server.ctx.db.query<{ n: string }>('SELECT count(*) AS n FROM runs WHERE factory_id = $1', [
      factoryId,
    ]);
    expect(Number(count.rows[0]!.n)).toBe(3);
  });

  it('lets a burst of concurrent requests start exactly the cap', async () => {
    const factoryId = await managedFactory(s, 'burst-capped', {
      'factory.yaml': factoryYaml('burst-capped', 'budget: {dailyRuns: 3}\n'),
      'agents/foreman/agent.md': agent('FOREMAN'),
      'runners/default.yaml': RUNNER,
    });
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) => s.api('POST', `/factories/${factoryId}/runs`, { prompt: `burst ${i}` })),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 200, ...Array(7).fill(429)]);
    const count = await s.server.ctx.db.query<{ n: string }>('SELECT count(*) AS n FROM runs WHERE factory_id = $1', [
      factoryId,
    ]);
    expect(Number(count.rows[0]!.n)).toBe(3);
  });

  it("skips an automation's firing past its dailyRuns, with the reason in the delivery log", async () => {
    const factoryId = await managedFactory(s, 'automation-capped', {
      'factory.yaml': factoryYaml('automation-capped'),
      'agents/foreman/agent.md': agent('FOREMAN', 'budget: {dailyRuns: 100}\n'),
      'runners/default.yaml': RUNNER,
      'webhooks/alerts.yaml': 'authMode: token\nsecretName: alerts-token\n',
      'automations/alerts/automation.md':
        '---\nbudget: {dailyRuns: 1}\ntriggers:\n  - provider: webhook\n    event: received\n    filter:\n      webhook_ids: [alerts]\n---\n\nLook at the alert.\n',
    });
    const [hook] = (await s.api('GET', `/factories/${factoryId}/webhooks`)).body.webhooks;
    const deliver = async (n: number): Promise<string> => {
      const res = await post(hook.ingress_url, JSON.stringify({ alert: n }), {
        'content-type': 'application/json',
        authorization: 'Bearer alerts-token-0123456789',
      });
      expect(res.status, res.text).toBe(202);
      await waitEvaluated(s, [res.body.delivery_id]);
      return res.body.delivery_id as string;
    };
    const first = await deliver(1);
    expect(await runsOfDeliveries(s, [first])).toHaveLength(1);
    const second = await deliver(2);
    expect(await runsOfDeliveries(s, [second])).toHaveLength(0);
    const reason =
      'skipped: automation alerts of factory automation-capped has started 1 runs today, its daily cap (budget.dailyRuns: 1) (daily cap, UTC day)';
    const page = await s.api('GET', `/webhooks/${hook.uid}/deliveries/${second}`);
    expect(page.status, page.text).toBe(200);
    expect(page.body.runs).toEqual([]);
    expect(page.body.skipped).toEqual([{ automation_id: expect.stringMatching(/^auto_/), reason }]);
    const log = (await s.api('GET', `/webhooks/${hook.uid}/deliveries`)).body.deliveries as Record<string, any>[];
    expect(log.find((d) => d.delivery_id === second)?.skipped_reasons).toEqual([reason]);
  });

  it("records a schedule's firing past an automation's dailyRuns as the fire's error, and starts nothing", async () => {
    const factoryId = await managedFactory(s, 'schedule-capped', {
      'factory.yaml': factoryYaml('schedule-capped'),
      'agents/foreman/agent.md': agent('FOREMAN'),
      'runners/default.yaml': RUNNER,
      'automations/hourly/automation.md':
        '---\nbudget: {dailyRuns: 1}\ntriggers:\n  - provider: schedule\n    event: cron_fired\n    schedule: {cron: "0 * * * *"}\n---\n\nTidy up.\n',
    });
    const db = s.server.ctx.db;
    // Syncs run one after another: once this one is done, so is the one the apply asked for (no sync left to
    // rewrite the schedule while the test fires it).
    await s.server.services.scheduleSync!.syncFactory(factoryId);
    const res = await db.query<{ id: string; next_run_at: Date }>(
      'SELECT id, next_run_at FROM schedules WHERE factory_id = $1 AND next_run_at IS NOT NULL',
      [factoryId],
    );
    const schedule = res.rows[0]!;
    expect(schedule, 'the automation schedule').toBeDefined();
    const fire = (now: Date) => fireDueSchedules(db, { now, firedBy: 'test', runs: s.server.services.runs });
    const first = new Date(schedule.next_run_at);
    expect((await fire(first)).runs).toHaveLength(1);
    expect((await fire(new Date(first.getTime() + 3_600_000))).runs).toHaveLength(0);
    const fires = await db.query<{ error: string | null; run_ids: string[] }>(
      'SELECT error, run_ids FROM schedule_fires WHERE schedule_id = $1 ORDER BY scheduled_for',
      [schedule.id],
    );
    expect(fires.rows.map((f) => f.run_ids.length)).toEqual([1, 0]);
    expect(fires.rows[1]!.error).toContain(
      'automation hourly of factory schedule-capped has started 1 runs today, its daily cap (budget.dailyRuns: 1); the next UTC day begins at',
    );
  });

  it("stops starting a factory's runs once the day's reported cost reaches dailyCostUsd", async () => {
    // each run of the fake Claude Code reports total_cost_usd 0.0125
    const factoryId = await managedFactory(s, 'cost-capped', {
      'factory.yaml': factoryYaml('cost-capped', 'budget: {dailyCostUsd: 0.02}\n'),
      'agents/foreman/agent.md': agent('FOREMAN'),
      'runners/default.yaml': RUNNER,
    });
    for (const i of [1, 2]) {
      const ok = await s.api('POST', `/factories/${factoryId}/runs`, { prompt: `task ${i}` });
      expect(ok.status, ok.text).toBe(200);
      expect((await waitForState(s, ok.body.run_id, ['SUCCEEDED', 'FAILED', 'ERROR'])).state).toBe('SUCCEEDED');
    }
    const refused = await s.api('POST', `/factories/${factoryId}/runs`, { prompt: 'task 3' });
    expect(refused.status, refused.text).toBe(429);
    expect(refused.body).toMatchObject({ code: 'daily_cap_reached', cap: 'dailyCostUsd', scope: 'factory' });
    expect(refused.body.detail).toContain(
      'the runs of factory cost-capped cost $0.0250 today, reaching its daily cap (budget.dailyCostUsd in factory.yaml: 0.02)',
    );
  });
});
