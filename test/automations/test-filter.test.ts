import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { post, seedFactory, seedWebhook, updateWebhook } from '../ingress/support.ts';
import { seedAutomation } from './support.ts';

describe.each(ENGINES)('test filter and automation status on %s', (engine) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(engine);
  });
  afterAll(async () => server?.close());

  async function fixture() {
    const factoryId = await seedFactory(server);
    const hook = await seedWebhook(server, { factoryId, name: 'alerts' });
    const other = await seedWebhook(server, { factoryId, name: 'deploys' });
    const automationId = await seedAutomation(server, {
      factoryId,
      name: 'critical',
      triggers: [
        { webhookUid: hook.uid, payload: { severity: { in: ['critical', 'high'] }, service: { name: 'api' } } },
      ],
    });
    const deliver = async (target: typeof hook, body: unknown, headers: Record<string, string> = {}) =>
      (await post(target.url, JSON.stringify(body), { authorization: `Bearer ${target.secret}`, ...headers })).body
        .delivery_id as string;
    return { factoryId, hook, other, automationId, deliver };
  }

  it('a hit: Would trigger, both checks passed', async () => {
    const f = await fixture();
    const deliveryId = await f.deliver(f.hook, { severity: 'high', service: { name: 'api' } });
    const res = await server.api('POST', `/automations/${f.automationId}/test-filter`, { delivery_id: deliveryId });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      result: 'Would trigger',
      delivery_id: deliveryId,
      webhook_check: { passed: true, detail: expect.stringContaining(`alerts (${f.hook.uid})`) },
      payload_check: { passed: true, trigger_index: 0 },
    });
  });

  it('a payload miss: Would not trigger, with the path that failed', async () => {
    const f = await fixture();
    const deliveryId = await f.deliver(f.hook, { severity: 'high', service: { name: 'web' } });
    const res = await server.api('POST', `/automations/${f.automationId}/test-filter`, { delivery_id: deliveryId });
    expect(res.body).toMatchObject({
      result: 'Would not trigger',
      webhook_check: { passed: true },
      payload_check: { passed: false, path: '/service/name', reason: expect.any(String) },
    });
  });

  it('a delivery to a webhook the automation does not select fails the webhook check', async () => {
    const f = await fixture();
    const deliveryId = await f.deliver(f.other, { severity: 'critical', service: { name: 'api' } });
    const res = await server.api('POST', `/automations/${f.automationId}/test-filter`, { delivery_id: deliveryId });
    expect(res.body).toMatchObject({
      result: 'Would not trigger',
      webhook_check: { passed: false },
      payload_check: { passed: true },
    });
    expect(res.body.webhook_check.detail).toContain(`no trigger selects webhook deploys (${f.other.uid})`);
  });

  it('a duplicate is tested with the payload of the delivery it repeats; a rejected delivery has none', async () => {
    const f = await fixture();
    const body = { severity: 'critical', service: { name: 'api' } };
    await f.deliver(f.hook, body);
    const duplicateId = await f.deliver(f.hook, body);
    const res = await server.api('POST', `/automations/${f.automationId}/test-filter`, { delivery_id: duplicateId });
    expect(res.body.result).toBe('Would trigger');
    const rejected = (await post(f.hook.url, '{}', { authorization: 'Bearer wrong' })).body.delivery_id;
    const refused = await server.api('POST', `/automations/${f.automationId}/test-filter`, { delivery_id: rejected });
    expect(refused.status).toBe(400);
    expect(refused.body.detail).toContain('no stored payload');
    expect(
      (
        await server.api('POST', `/automations/${f.automationId}/test-filter`, {
          delivery_id: 'dlv_00000000000000000000000000',
        })
      ).status,
    ).toBe(404);
    expect(
      (await server.api('POST', '/automations/auto_00000000000000000000000000/test-filter', { delivery_id: rejected }))
        .status,
    ).toBe(404);
  });

  it('a deleted webhook: the automation stays visible, not firing, and test filter says why', async () => {
    const f = await fixture();
    const deliveryId = await f.deliver(f.hook, { severity: 'critical', service: { name: 'api' } });
    const before = await server.api('GET', `/automations/${f.automationId}`);
    expect(before.body).toMatchObject({
      firing: true,
      not_firing_reasons: [],
      webhook_triggers: [{ webhook_uid: f.hook.uid, webhook_state: 'enabled', webhook_name: 'alerts' }],
    });

    await updateWebhook(server, f.hook, { enabled: false });
    const disabled = await server.api('GET', `/automations/${f.automationId}`);
    expect(disabled.body).toMatchObject({ firing: false, webhook_triggers: [{ webhook_state: 'disabled' }] });

    await updateWebhook(server, f.hook, { deleted: true });
    const after = await server.api('GET', `/automations/${f.automationId}`);
    expect(after.status).toBe(200);
    expect(after.body).toMatchObject({
      name: 'critical',
      firing: false,
      webhook_triggers: [{ webhook_state: 'deleted' }],
    });
    expect(after.body.not_firing_reasons).toEqual([`trigger 1: webhook alerts (${f.hook.uid}) was deleted`]);
    const res = await server.api('POST', `/automations/${f.automationId}/test-filter`, { delivery_id: deliveryId });
    expect(res.body).toMatchObject({
      result: 'Would not trigger',
      webhook_check: { passed: false, detail: expect.stringContaining('was deleted') },
      payload_check: { passed: true },
    });
  });
});
