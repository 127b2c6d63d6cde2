/**
 * End to end on real HTTP: a factory from committed files (git) or built through the API (managed), a
 * delivery signed with the provider's own library, and exactly the matching automations start runs.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { parse } from 'yaml';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { baseFiles } from '../factories/fixtures.ts';
import { automationMd } from '../support/factory-tree.ts';
import { createGitFactory } from '../factories/support.ts';
import { post } from '../ingress/support.ts';
import { createManagedFactory } from '../factories/support.ts';
import { runsOfDeliveries, waitEvaluated } from './support.ts';

describe.each(ENGINES)('automations end to end on %s', (engine) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(engine);
  });
  afterAll(async () => server?.close());

  it('a factory from committed files: a signed delivery starts exactly the matching automations', async () => {
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    expect((await server.api('PUT', '/secrets/alerts-signing', { value: secret })).status).toBeLessThan(300);
    const git = await createGitFactory(server, {
      ...baseFiles(),
      'webhooks/alerts.yaml': 'authMode: signature\nsignatureScheme: standard_webhooks\nsecretName: alerts-signing\n',
    });
    const [hook] = await git.webhooks();
    await git.commit(
      {
        'automations/critical/automation.md': automationMd(hook.uid, {
          payload: 'severity: [critical]',
          prompt: 'Page the owner of the failing service.',
        }),
        'automations/every-alert/automation.md': automationMd(hook.uid, {
          prompt: 'Write the alert into the incident log.',
        }),
        'automations/resolved/automation.md': automationMd(hook.uid, {
          payload: 'action: resolved',
          prompt: 'Close the incident.',
        }),
      },
      'automations for alerts',
    );
    expect((await git.sync()).result).toBe('applied');
    const automations = (await server.api('GET', `/factories/${git.id}/automations`)).body.automations as {
      id: string;
      name: string;
      firing: boolean;
    }[];
    const idOf = (name: string) => automations.find((a) => a.name === name)!.id;
    // The factory's list shows each automation as GET /automations/{id} does, whether it fires included.
    expect(automations.map((a) => a.firing)).toEqual([true, true, true]);
    for (const a of automations) expect(a).toEqual((await server.api('GET', `/automations/${a.id}`)).body);

    const body = JSON.stringify({ action: 'triggered', severity: 'critical', service: 'api' });
    const at = new Date();
    const res = await post(hook.ingress_url, body, {
      'content-type': 'application/json',
      'webhook-id': 'msg_e2e_1',
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': new StandardWebhook(secret).sign('msg_e2e_1', at, body),
    });
    expect(res.status, res.text).toBe(202);
    const deliveryId = res.body.delivery_id as string;
    await waitEvaluated(server, [deliveryId]);

    const runs = await runsOfDeliveries(server, [deliveryId]);
    expect(runs.map((r) => r.automation_id).sort()).toEqual([idOf('critical'), idOf('every-alert')].sort());
    const item = (await server.api('GET', `/agent/runs/${runs.find((r) => r.automation_id === idOf('critical'))!.id}`))
      .body;
    expect(item).toMatchObject({
      source: 'API',
      source_detail: 'WEBHOOK',
      delivery_id: deliveryId,
      factory_uid: git.id,
      creator: { type: 'service_account', uid: idOf('critical'), display_name: 'automation critical' },
      agent_config: {
        name: 'critical',
        model_id: 'auto',
        worker_host: 'build-box-1',
        runner_id: 'default',
        base_prompt: expect.stringContaining('You are the on-call foreman.'),
      },
    });
    expect(item.prompt).toMatch(/^Page the owner of the failing service\.\n/);
    expect(item.prompt).toContain(`Webhook: alerts (${hook.uid})`);
    expect(item.prompt).toContain(`Delivery ID: ${deliveryId}`);
    const attachment = await server.server.ctx.db.query<{ data: Uint8Array }>(
      "SELECT data FROM run_attachments WHERE run_id = $1 AND file_name = 'event-payload.json'",
      [item.run_id],
    );
    expect(Buffer.from(attachment.rows[0]!.data).toString()).toBe(body);

    const detail = await server.api('GET', `/webhooks/${hook.uid}/deliveries/${deliveryId}`);
    expect(detail.body.runs.map((r: { run_id: string }) => r.run_id).sort()).toEqual(runs.map((r) => r.id).sort());

    const hit = await server.api('POST', `/automations/${idOf('critical')}/test-filter`, { delivery_id: deliveryId });
    expect(hit.body.result).toBe('Would trigger');
    const miss = await server.api('POST', `/automations/${idOf('resolved')}/test-filter`, { delivery_id: deliveryId });
    expect(miss.body).toMatchObject({ result: 'Would not trigger', payload_check: { passed: false, path: '/action' } });

    // Deleting the webhook file: senders get 404, the automations stay visible and stop firing.
    await git.commit({}, 'remove the alerts webhook', { remove: ['webhooks/alerts.yaml'] });
    expect((await git.sync()).result).toBe('applied');
    expect((await post(hook.ingress_url, body, {})).status).toBe(404);
    const after = await server.api('GET', `/automations/${idOf('critical')}`);
    expect(after.body).toMatchObject({
      firing: false,
      webhook_triggers: [{ webhook_uid: hook.uid, webhook_state: 'deleted' }],
    });
    const listed = (await server.api('GET', `/factories/${git.id}/automations`)).body.automations as {
      id: string;
      firing: boolean;
      not_firing_reasons: string[];
    }[];
    expect(listed.find((a) => a.id === idOf('critical'))).toEqual(after.body);
    for (const a of listed) {
      expect(a.firing).toBe(false);
      expect(a.not_firing_reasons).toEqual([`trigger 1: webhook alerts (${hook.uid}) was deleted`]);
    }
  });

  it('a managed factory built through the API: webhook, automations, edits and deletion as file changes', async () => {
    const factoryId = await createManagedFactory(server);
    const hook = (await server.api('POST', `/factories/${factoryId}/webhooks`, { name: 'orders' })).body;
    const created = await server.api('POST', `/factories/${factoryId}/automations`, {
      name: 'big-orders',
      prompt: 'Check the large order for fraud.',
      settings: { workerHost: 'fraud-box' },
      triggers: [
        { provider: 'webhook', event: 'received', filter: { webhook_ids: [hook.uid], payload: { size: ['large'] } } },
      ],
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toMatchObject({
      name: 'big-orders',
      enabled: true,
      firing: true,
      file: 'automations/big-orders/automation.md',
      config: { worker_host: 'fraud-box' },
    });
    const definition = (await server.api('GET', `/factories/${factoryId}/definition`)).body;
    const file = definition.files.find((f: { path: string }) => f.path === 'automations/big-orders/automation.md')
      .content as string;
    expect(file).toMatch(/^---\n/);
    expect(file).toContain('Check the large order for fraud.');
    expect(parse(file.split('---\n')[1]!)).toMatchObject({
      enabled: true,
      workerHost: 'fraud-box',
      triggers: [{ filter: { webhook_ids: [hook.uid] } }],
    });

    const send = async (payload: unknown) => {
      const res = await post(hook.ingress_url, JSON.stringify(payload), { authorization: `Bearer ${hook.secret}` });
      expect(res.status).toBe(202);
      await waitEvaluated(server, [res.body.delivery_id]);
      return (await runsOfDeliveries(server, [res.body.delivery_id])).length;
    };
    expect(await send({ size: 'large', n: 1 })).toBe(1);
    expect(await send({ size: 'small', n: 2 })).toBe(0);

    const disabled = await server.api('PATCH', `/automations/${created.body.id}`, { enabled: false });
    expect(disabled.status, disabled.text).toBe(200);
    expect(disabled.body).toMatchObject({ enabled: false, firing: false });
    expect(await send({ size: 'large', n: 3 })).toBe(0);

    const edited = await server.api('PATCH', `/automations/${created.body.id}`, {
      enabled: true,
      prompt: 'Check every order.',
      triggers: [{ provider: 'webhook', event: 'received', filter: { webhook_ids: [hook.uid] } }],
      settings: { workerHost: null },
    });
    expect(edited.status, edited.text).toBe(200);
    expect(edited.body).toMatchObject({ enabled: true, prompt: expect.stringContaining('Check every order.') });
    // Without its own workerHost the automation inherits the factory's agentDefaults again.
    expect(edited.body.config.worker_host).toBe('build-box-1');
    expect(await send({ size: 'small', n: 4 })).toBe(1);

    expect((await server.api('PATCH', `/automations/${created.body.id}`, { name: 'other' })).status).toBe(400);
    const taken = await server.api('POST', `/factories/${factoryId}/automations`, {
      name: 'big-orders',
      prompt: 'x',
      triggers: [{ provider: 'webhook', event: 'received', filter: { webhook_ids: [hook.uid] } }],
    });
    expect(taken.body.code).toBe('automation_name_taken');
    const invalid = await server.api('POST', `/factories/${factoryId}/automations`, {
      name: 'bad',
      prompt: 'x',
      triggers: [{ provider: 'webhook', event: 'received', filter: { webhook_ids: ['alerts'] } }],
    });
    expect(invalid.status).toBe(422);
    expect(invalid.body).toMatchObject({
      code: 'definition_invalid',
      detail: expect.stringContaining('automations/bad/automation.md'),
    });

    expect((await server.api('DELETE', `/automations/${created.body.id}`)).status).toBe(204);
    expect((await server.api('GET', `/automations/${created.body.id}`)).status).toBe(404);
    expect(
      (await server.api('GET', `/factories/${factoryId}/definition`)).body.files.map((f: { path: string }) => f.path),
    ).not.toContain('automations/big-orders/automation.md');
    expect(await send({ size: 'large', n: 5 })).toBe(0);
  });
});
