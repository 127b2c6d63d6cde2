/**
 * Several processes evaluating one PostgreSQL outbox: exactly one run per (delivery, automation) when they
 * race, and when one is killed (SIGKILL, mid-evaluation) and another finishes its work.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutboxEvaluator } from '../../src/automations/evaluator.ts';
import { DELIVERIES_EVALUATED_TOPIC, RUNS_QUEUED_TOPIC } from '../../src/kernel/topics.ts';
import { pollUntil, whenTold } from '../support/signals.ts';
import type { CompositionOptions } from '../../src/composition.ts';
import { spawnAgentyard, serveEnv } from '../support/agentyard-process.ts';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { post, seedFactory, seedWebhook } from '../ingress/support.ts';
import { runsOfDeliveries, seedAutomation, waitEvaluated } from './support.ts';

const WITHOUT_EVALUATOR: CompositionOptions = { automations: false };

async function acceptMany(
  server: TestServer,
  count: number,
  automations: number,
): Promise<{ ids: string[]; automationIds: string[] }> {
  const factoryId = await seedFactory(server);
  // Several webhooks, so that the sender rate limit (60 per minute per webhook) is no obstacle.
  const hooks = await Promise.all(
    Array.from({ length: Math.ceil(count / 50) }, () => seedWebhook(server, { factoryId })),
  );
  const automationIds: string[] = [];
  for (let i = 0; i < automations; i++) {
    automationIds.push(
      await seedAutomation(server, {
        factoryId,
        name: `auto-${i}`,
        triggers: hooks.map((h) => ({ webhookUid: h.uid })),
      }),
    );
  }
  const ids: string[] = [];
  for (let i = 0; i < count; i += 25) {
    const answers = await Promise.all(
      Array.from({ length: Math.min(25, count - i) }, (_, j) => {
        const hook = hooks[Math.floor((i + j) / 50)]!;
        return post(hook.url, `{"n":${i + j}}`, { authorization: `Bearer ${hook.secret}` });
      }),
    );
    for (const a of answers) {
      expect(a.status).toBe(202);
      ids.push(a.body.delivery_id);
    }
  }
  return { ids, automationIds };
}

function expectOneRunPerPair(
  runs: { delivery_id: string | null; automation_id: string | null }[],
  deliveries: number,
  automations: number,
): void {
  expect(runs).toHaveLength(deliveries * automations);
  expect(new Set(runs.map((r) => `${r.delivery_id}/${r.automation_id}`)).size).toBe(deliveries * automations);
}

describe.runIf(ENGINES.includes('postgres'))('evaluation across processes on PostgreSQL', () => {
  let a: TestServer;
  beforeAll(async () => {
    a = await startTestServer('postgres', { compose: WITHOUT_EVALUATOR });
  });
  afterAll(async () => {
    await a?.close();
  });

  it('two processes racing over one outbox start exactly one run per (delivery, automation)', async () => {
    const { ids } = await acceptMany(a, 150, 2);
    const b = await startTestServer('postgres', { database: a.database, compose: WITHOUT_EVALUATOR });
    try {
      const evaluators = [a, b, a, b].map((s) => new OutboxEvaluator(s.server.services, { batchSize: 7 }));
      for (const e of evaluators) e.kick();
      await Promise.all(evaluators.map((e) => e.idle()));
      await waitEvaluated(a, ids);
      expectOneRunPerPair(await runsOfDeliveries(a, ids), 150, 2);
    } finally {
      await b.close();
    }
  });

  it('a server process killed mid-evaluation: another finishes, and every pair has exactly one run', async () => {
    const { ids } = await acceptMany(a, 300, 3);
    const other = spawnAgentyard(['serve', '--port', '0', '--host', '127.0.0.1'], serveEnv(a.database));
    let seen = 0;
    try {
      // Kill it as soon as it has committed some runs (its NOTIFYs say so): it is then somewhere inside the outbox.
      seen = await whenTold(
        a.server.ctx.bus,
        [DELIVERIES_EVALUATED_TOPIC, RUNS_QUEUED_TOPIC],
        async () => (await runsOfDeliveries(a, ids)).length || undefined,
        { what: 'the other process to commit some runs', timeoutMs: 60_000 },
      );
    } finally {
      other.child.kill('SIGKILL');
      await other.stop();
    }
    expect(seen).toBeGreaterThan(0);
    const survivor = new OutboxEvaluator(a.server.services);
    survivor.kick();
    await survivor.idle();
    // Rows the killed process had locked come free when PostgreSQL notices its connection is gone: nothing
    // tells that, so the survivor drains again until the outbox is empty.
    await pollUntil(
      async () => {
        survivor.kick();
        await survivor.idle();
        const pending = await a.server.ctx.db.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM webhook_deliveries WHERE outbox_pending',
        );
        return pending.rows[0]!.n === 0;
      },
      { what: "the killed process's locked deliveries to come free", everyMs: 100, timeoutMs: 20_000 },
    );
    await waitEvaluated(a, ids);
    expectOneRunPerPair(await runsOfDeliveries(a, ids), 300, 3);
  });
});
