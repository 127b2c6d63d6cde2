/**
 * Replaying a delivery on real HTTP: the original's payload is evaluated again against the automations as they
 * are now, logged as a new accepted delivery that names the original, and starts runs the normal way.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { createManagedFactory } from '../factories/support.ts';
import { post } from './support.ts';
import { runsOfDeliveries, waitEvaluated } from '../automations/support.ts';

describe.each(ENGINES)('delivery replay on %s', (engine) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(engine);
  });
  afterAll(async () => server?.close());

  it('evaluates the stored payload again against the current automations, as a new delivery naming the original', async () => {
    const factoryId = await createManagedFactory(server);
    const hook = (await server.api('POST', `/factories/${factoryId}/webhooks`, { name: 'orders' })).body;
    const sent = await post(hook.ingress_url, JSON.stringify({ size: 'large' }), {
      authorization: `Bearer ${hook.secret}`,
    });
    expect(sent.status).toBe(202);
    const original = sent.body.delivery_id as string;
    await waitEvaluated(server, [original]);
    expect(await runsOfDeliveries(server, [original])).toEqual([]);

    // An automation made after the delivery arrived: only a replay reaches it.
    const automation = await server.api('POST', `/factories/${factoryId}/automations`, {
      name: 'big-orders',
      prompt: 'Check the large order.',
      triggers: [
        { provider: 'webhook', event: 'received', filter: { webhook_ids: [hook.uid], payload: { size: ['large'] } } },
      ],
    });
    expect(automation.status, automation.text).toBe(201);

    const replayed = await server.api('POST', `/webhooks/${hook.uid}/deliveries/${original}/replay`);
    expect(replayed.status, replayed.text).toBe(201);
    expect(replayed.body).toEqual({ delivery_id: expect.stringMatching(/^dlv_/), replay_of: original });
    const replay = replayed.body.delivery_id as string;
    expect(replay).not.toBe(original);
    await waitEvaluated(server, [replay]);

    const runs = await runsOfDeliveries(server, [replay]);
    expect(runs.map((r) => r.automation_id)).toEqual([automation.body.id]);
    const detail = (await server.api('GET', `/webhooks/${hook.uid}/deliveries/${replay}`)).body;
    expect(detail).toMatchObject({
      status: 'accepted',
      replay_of: original,
      replayed_by: expect.any(String),
      payload: { size: 'large' },
      evaluation: 'evaluated',
      runs: [{ run_id: runs[0]!.id, automation_id: automation.body.id }],
    });
    const run = (await server.api('GET', `/agent/runs/${runs[0]!.id}`)).body;
    expect(run).toMatchObject({ source_detail: 'WEBHOOK', delivery_id: replay });
    // The payload is byte for byte the original's; the original is unchanged and started nothing.
    const bytes = await server.api('GET', `/webhooks/${hook.uid}/deliveries/${replay}/payload`);
    expect(bytes.text).toBe(JSON.stringify({ size: 'large' }));
    expect((await server.api('GET', `/webhooks/${hook.uid}/deliveries/${original}`)).body).toMatchObject({
      runs: [],
    });
    expect((await server.api('GET', `/webhooks/${hook.uid}/deliveries/${original}`)).body.replay_of).toBeUndefined();
    const log = (await server.api('GET', `/webhooks/${hook.uid}/deliveries`)).body.deliveries as {
      delivery_id: string;
      replay_of?: string;
    }[];
    expect(log[0]).toMatchObject({ delivery_id: replay, replay_of: original });

    // A replay can be replayed too, and each replay starts its own run.
    const again = await server.api('POST', `/webhooks/${hook.uid}/deliveries/${original}/replay`);
    expect(again.status).toBe(201);
    await waitEvaluated(server, [again.body.delivery_id]);
    expect(await runsOfDeliveries(server, [again.body.delivery_id])).toHaveLength(1);
  });

  it('refuses members, rejected deliveries and unknown ones, each with a clear error', async () => {
    const factoryId = await createManagedFactory(server);
    const hook = (await server.api('POST', `/factories/${factoryId}/webhooks`, { name: 'alerts' })).body;
    const accepted = await post(hook.ingress_url, '{"a":1}', { authorization: `Bearer ${hook.secret}` });
    const rejected = await post(hook.ingress_url, '{"a":1}', { authorization: 'Bearer wrong' });
    expect(rejected.status).toBe(401);
    const rejectedId = rejected.body.delivery_id as string;

    const member = (await server.api('POST', '/api-keys', { name: 'replay member', role: 'member' })).body
      .key as string;
    const asMember = await server.api(
      'POST',
      `/webhooks/${hook.uid}/deliveries/${accepted.body.delivery_id}/replay`,
      undefined,
      member,
    );
    expect(asMember.status).toBe(403);
    expect(asMember.body.detail).toContain('team admin');

    const notAccepted = await server.api('POST', `/webhooks/${hook.uid}/deliveries/${rejectedId}/replay`);
    expect(notAccepted.status).toBe(400);
    expect(notAccepted.body.detail).toContain('only an accepted delivery can be replayed');

    const unknown = await server.api('POST', `/webhooks/${hook.uid}/deliveries/dlv_nope/replay`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.detail).toContain('dlv_nope');
    const otherHook = await server.api('POST', `/webhooks/whk_nope/deliveries/${accepted.body.delivery_id}/replay`);
    expect(otherHook.status).toBe(404);
  });
});
