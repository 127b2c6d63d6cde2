/**
 * Concurrency keys end to end on real HTTP (docs/governance.md, "Concurrency keys"): a factory's automations
 * keyed by `{{payload.service}}` of real webhook deliveries, runs executed by the server's executors (the
 * `command` harness on a fake agent that waits): `queue` holds the second run of a key, saying why in the Run
 * API and the console, and starts it when the first ends; `cancelRunning` cancels the older run and the run it
 * started, naming the newer run; `skip` starts nothing and the delivery log says why. A GitHub pull_request
 * example of `@octokit/webhooks-examples` through a real connection renders `{{repository}}#{{pull_request.number}}`.
 */
import { randomBytes } from 'node:crypto';
import { sign } from '@octokit/webhooks-methods';
import examples from '@octokit/webhooks-examples/api.github.com/index.json' with { type: 'json' };
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { baseFiles, FOREMAN, RUNNER } from '../support/factory-tree.ts';
import { request, startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { startExecServer, waitForState } from '../execution/support.ts';
import type { ExecServer } from '../execution/support.ts';
import { get, signIn } from '../console/support.ts';
import type { Session } from '../console/support.ts';
import { createGitFactory } from '../factories/support.ts';
import { post } from '../ingress/support.ts';
import { connectProviders } from '../integrations/connections.ts';
import { runsOfDeliveries, waitEvaluated } from './support.ts';

const TOKEN = 'tok-concurrency-0123456789';

/** A webhook automation on `uid` whose runs wait (the fake agent's WAIT), with this `concurrency`. */
function keyedAutomation(uid: string, service: string, concurrency: string): string {
  return `---
triggers:
  - provider: webhook
    event: received
    filter:
      webhook_ids: [${uid}]
      payload:
        service: [${service}]
concurrency: ${concurrency}
---

Handle the alert. WAIT 60
`;
}

describe.each(ENGINES)('concurrency keys through webhook deliveries on %s', (engine) => {
  let s: ExecServer;
  let admin: Session;
  let ingressUrl: string;

  beforeAll(async () => {
    s = await startExecServer(engine, { settings: { harnesses: ['command'], defaultHarness: 'command' } });
    admin = await signIn(s, s.adminKey);
    expect((await s.api('PUT', '/secrets/alerts-token', { value: TOKEN })).status).toBeLessThan(300);
    const factory = await s.api('POST', '/factories', { name: 'keyed', source: { type: 'managed' } });
    expect(factory.status, factory.text).toBe(201);
    const id = factory.body.id as string;
    const files = (extra: Record<string, string>) =>
      Object.entries({
        ...baseFiles(),
        'webhooks/alerts.yaml': 'authMode: token\nsecretName: alerts-token\n',
        ...extra,
      }).map(([p, content]) => ({ path: p, content }));
    const first = await s.api('POST', `/factories/${id}/apply`, { files: files({}), message: 'webhook' });
    expect(first.status, first.text).toBe(200);
    const [hook] = (await s.api('GET', `/factories/${id}/webhooks`)).body.webhooks;
    ingressUrl = hook.ingress_url;
    const key = '"svc-{{payload.service}}"';
    const second = await s.api('POST', `/factories/${id}/apply`, {
      files: files({
        'automations/queued/automation.md': keyedAutomation(hook.uid, 'billing', `{key: ${key}}`),
        'automations/newest/automation.md': keyedAutomation(
          hook.uid,
          'search',
          `{key: ${key}, limit: 1, onNew: cancelRunning}`,
        ),
        'automations/once/automation.md': keyedAutomation(hook.uid, 'mail', `{key: ${key}, onNew: skip}`),
      }),
      message: 'keyed automations',
    });
    expect(second.status, second.text).toBe(200);
  });
  afterAll(async () => {
    await s?.close();
  });

  async function deliver(payload: Record<string, unknown>): Promise<string> {
    const res = await request(ingressUrl, {
      method: 'POST',
      body: JSON.stringify(payload),
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    });
    expect(res.status, res.text).toBe(202);
    await waitEvaluated(s, [res.body.delivery_id]);
    return res.body.delivery_id as string;
  }

  async function runOf(deliveryId: string): Promise<string> {
    const [run] = await runsOfDeliveries(s, [deliveryId]);
    expect(run, `a run of delivery ${deliveryId}`).toBeDefined();
    return run!.id;
  }

  const cancel = async (runId: string) => expect((await s.api('POST', `/agent/runs/${runId}/cancel`)).status).toBe(200);

  it('queue: the second run of a key waits, saying why, and starts when the first ends', async () => {
    const first = await runOf(await deliver({ service: 'billing', n: 1 }));
    await waitForState(s, first, ['INPROGRESS']);
    const second = await runOf(await deliver({ service: 'billing', n: 2 }));
    const held = (await s.api('GET', `/agent/runs/${second}`)).body;
    expect(held).toMatchObject({
      state: 'QUEUED',
      status_message: { message: 'queued: concurrency key svc-billing at limit 1' },
      concurrency: { key: 'svc-billing', limit: 1 },
    });
    // a claim pass of the executor after it was queued leaves it held
    const executor = s.parts.executor!;
    executor.wake();
    await executor.claimsIdle();
    expect((await s.api('GET', `/agent/runs/${second}`)).body.state).toBe('QUEUED');
    const page = await get(s, `/console/runs/${second}`, admin.cookie);
    expect(page.text).toContain('queued because of key <code>svc-billing</code> (limit 1)');
    const list = await get(s, '/console/runs', admin.cookie);
    expect(list.text).toContain('queued because of key <code>svc-billing</code>');

    await cancel(first);
    const started = await waitForState(s, second, ['INPROGRESS']);
    expect(started.status_message?.message ?? '').not.toContain('queued: concurrency key');
    await cancel(second);
  });

  it('cancelRunning: a newer run cancels the older one and the run it started, naming the newer run', async () => {
    const older = await runOf(await deliver({ service: 'search', n: 1 }));
    await waitForState(s, older, ['INPROGRESS']);
    const child = (await s.api('POST', '/agent/runs', { prompt: 'a helper WAIT 60', parent_run_id: older })).body
      .run_id as string;
    await waitForState(s, child, ['INPROGRESS']);

    const newer = await runOf(await deliver({ service: 'search', n: 2 }));
    const cancelled = await waitForState(s, older, ['CANCELLED']);
    expect(cancelled.status_message.message).toBe(`cancelled by a newer run ${newer} (concurrency key svc-search)`);
    expect(cancelled.concurrency).toEqual({ key: 'svc-search', limit: 1, superseded_by: newer });
    const childRun = await waitForState(s, child, ['CANCELLED']);
    expect(childRun.status_message.message).toContain(`superseded by the newer run ${newer}`);
    // the newer run starts once the older one has let go of the key
    await waitForState(s, newer, ['INPROGRESS']);
    const page = await get(s, `/console/runs/${older}`, admin.cookie);
    expect(page.text).toContain(`cancelled by a newer run <a href="/console/runs/${newer}"><code>${newer}</code></a>`);
    await cancel(newer);
  });

  it('skip: a firing over the limit starts no run, and the delivery log says why', async () => {
    const first = await runOf(await deliver({ service: 'mail', n: 1 }));
    await waitForState(s, first, ['INPROGRESS']);
    const skippedDelivery = await deliver({ service: 'mail', n: 2 });
    expect(await runsOfDeliveries(s, [skippedDelivery])).toEqual([]);
    const hookUid = new URL(ingressUrl).pathname.split('/').pop()!;
    // deliver() waited for its evaluation: the delivery log has it
    const res = await s.api('GET', `/webhooks/${hookUid}/deliveries/${skippedDelivery}`);
    expect(res.status, res.text).toBe(200);
    const detail = res.body;
    expect(detail.runs).toEqual([]);
    expect(detail.skipped).toEqual([
      {
        automation_id: expect.stringMatching(/^auto_/),
        reason: `skipped: concurrency key svc-mail at limit 1 (onNew: skip; 1 run of the key not ended: ${first})`,
      },
    ]);
    const log = (await s.api('GET', `/webhooks/${hookUid}/deliveries`)).body.deliveries as Record<string, any>[];
    expect(log.find((d) => d.delivery_id === skippedDelivery)?.skipped_reasons).toEqual([detail.skipped[0].reason]);
    // once the first has ended, the key is free again
    await cancel(first);
    await waitForState(s, first, ['CANCELLED']);
    const again = await runOf(await deliver({ service: 'mail', n: 3 }));
    await waitForState(s, again, ['INPROGRESS']);
    await cancel(again);
  });
});

describe.each(ENGINES)('a change of concurrency alone on %s', (engine) => {
  it('is listed in the plan as an update of the automation', async () => {
    const s = await startTestServer(engine);
    try {
      expect((await s.api('PUT', '/secrets/alerts-token', { value: TOKEN })).status).toBeLessThan(300);
      const created = await s.api('POST', '/factories', { name: 'plan', source: { type: 'managed' } });
      const id = created.body.id as string;
      const files = (concurrency: string, uid = 'alerts') =>
        Object.entries({
          ...baseFiles(),
          'webhooks/alerts.yaml': 'authMode: token\nsecretName: alerts-token\n',
          'automations/keyed/automation.md': keyedAutomation(uid, 'billing', concurrency),
        }).map(([p, content]) => ({ path: p, content }));
      const applied = await s.api('POST', `/factories/${id}/apply`, { files: files('{key: k}'), message: 'one' });
      expect(applied.status, applied.text).toBe(200);
      const plan = await s.api('POST', `/factories/${id}/plan`, { files: files('{key: k, limit: 2}') });
      expect(plan.status, plan.text).toBe(200);
      expect(plan.body.changes).toContainEqual(
        expect.objectContaining({ kind: 'automation', name: 'keyed', action: 'updated', fields: ['concurrency'] }),
      );
    } finally {
      await s.close();
    }
  });
});

type Payload = Record<string, any>;

function githubExample(event: string, action: string): Payload {
  const entry = (examples as { name: string; examples: Payload[] }[]).find((e) => e.name === event)!;
  return structuredClone(entry.examples.find((x) => x.action === action)!);
}

describe.each(ENGINES)('a GitHub pull_request keyed by {{repository}}#{{pull_request.number}} on %s', (engine) => {
  let server: TestServer;
  const secret = randomBytes(20).toString('hex');
  let githubUrl: string;
  let sequence = 0;

  beforeAll(async () => {
    // no executor: the runs stay QUEUED, so the older one is still active when the newer arrives
    server = await startTestServer(engine, { config: { roles: new Set(['api', 'ingress', 'controller']) } });
    githubUrl = (await connectProviders(server, { github: secret, slack: 'x'.repeat(32), linear: 'y'.repeat(32) }))
      .github!;
  });
  afterAll(async () => server?.close());

  it('applies a factory whose review automation is keyed by pull request, and its maxActiveRuns', async () => {
    const factory = await createGitFactory(server, {
      'factory.yaml': `schemaVersion: v1alpha1
name: Reviews
repositories:
  - owner: Codertocat
    name: Hello-World
maxActiveRuns: 3
agentDefaults:
  model: auto
  runner: default
`,
      'agents/foreman/agent.md': FOREMAN,
      'runners/default.yaml': RUNNER,
      'automations/review/automation.md': `---
triggers:
  - provider: github
    event: pull_request_opened
  - provider: github
    event: pull_request_synchronized
concurrency:
  key: "{{repository}}#{{pull_request.number}}"
  limit: 1
  onNew: cancelRunning
---

Review the pull request.
`,
    });
    expect((await factory.sync()).status.state).toBe('applied');
    const max = await server.server.ctx.db.query<{ max_active_runs: number }>(
      'SELECT max_active_runs FROM factories WHERE id = $1',
      [factory.id],
    );
    expect(max.rows[0]!.max_active_runs).toBe(3);
  });

  async function github(header: string, payload: Payload): Promise<string> {
    const body = JSON.stringify(payload);
    const res = await post(githubUrl, body, {
      'content-type': 'application/json',
      'x-github-event': header,
      'x-github-delivery': `c0ffee00-0000-4000-8000-${String(++sequence).padStart(12, '0')}`,
      'x-hub-signature-256': await sign(secret, body),
    });
    expect(res.status, res.text).toBe(202);
    await waitEvaluated(server, [res.body.delivery_id]);
    return res.body.delivery_id as string;
  }

  function pullRequest(action: string, number?: number): Payload {
    const payload = githubExample('pull_request', action);
    payload.repository.full_name = 'Codertocat/Hello-World';
    payload.pull_request.author_association = 'OWNER';
    if (number !== undefined) payload.pull_request.number = number;
    return payload;
  }

  it('keeps only the newest run of a pull request; another pull request keeps its own', async () => {
    const opened = pullRequest('opened');
    const number = opened.pull_request.number as number;
    const [first] = await runsOfDeliveries(server, [await github('pull_request', opened)]);
    const [other] = await runsOfDeliveries(server, [
      await github('pull_request', pullRequest('opened', number + 1000)),
    ]);
    const item = (await server.api('GET', `/agent/runs/${first!.id}`)).body;
    expect(item.concurrency).toEqual({ key: `codertocat/hello-world#${number}`, limit: 1 });

    const [newer] = await runsOfDeliveries(server, [await github('pull_request', pullRequest('synchronize'))]);
    expect(newer).toBeDefined();
    const older = (await server.api('GET', `/agent/runs/${first!.id}`)).body;
    expect(older).toMatchObject({
      state: 'CANCELLED',
      status_message: {
        message: `cancelled by a newer run ${newer!.id} (concurrency key codertocat/hello-world#${number})`,
      },
      concurrency: { superseded_by: newer!.id },
    });
    expect((await server.api('GET', `/agent/runs/${newer!.id}`)).body).toMatchObject({
      state: 'QUEUED',
      concurrency: { key: `codertocat/hello-world#${number}`, limit: 1 },
    });
    expect((await server.api('GET', `/agent/runs/${other!.id}`)).body).toMatchObject({
      state: 'QUEUED',
      concurrency: { key: `codertocat/hello-world#${number + 1000}` },
    });
  });
});
