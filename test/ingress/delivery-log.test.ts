import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { post, seedFactory, seedWebhook, updateWebhook } from './support.ts';
import { seedAutomation, waitEvaluated } from '../automations/support.ts';

describe.each(ENGINES)('the delivery log API on %s', (engine) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(engine);
  });
  afterAll(async () => server?.close());

  it('lists every label newest first with label, delivery ID, size and time, a page at a time', async () => {
    const hook = await seedWebhook(server);
    const auth = { authorization: `Bearer ${hook.secret}` };
    const sent = [
      await post(hook.url, '{"n":1}', auth),
      await post(hook.url, '{"n":1}', auth),
      await post(hook.url, '{"n":2}', { authorization: 'Bearer wrong' }),
      await post(hook.url, 'nope', auth),
      await post(hook.url, Buffer.alloc(300_000, 0x20), auth),
      await post(hook.url, '[2]', { ...auth, 'x-agentyard-delivery-id': 'evt-9' }),
    ];
    const ids = sent.map((r) => r.body.delivery_id as string);
    const seen: any[] = [];
    let cursor: string | undefined;
    do {
      const page = await server.api(
        'GET',
        `/webhooks/${hook.uid}/deliveries?limit=4${cursor ? `&cursor=${cursor}` : ''}`,
      );
      expect(page.status).toBe(200);
      seen.push(...page.body.deliveries);
      cursor = page.body.page_info.next_cursor;
      expect(page.body.page_info.has_next_page).toBe(cursor !== undefined);
    } while (cursor);
    expect(seen.map((d) => d.delivery_id)).toEqual([...ids].reverse());
    expect(seen.map((d) => d.label).reverse()).toEqual([
      'Accepted',
      'Duplicate',
      'Rejected (auth)',
      'Rejected (invalid JSON)',
      'Rejected (too large)',
      'Accepted',
    ]);
    expect(seen.map((d) => d.size).reverse()).toEqual([7, 7, 7, 4, 300_000, 3]);
    expect(seen.at(-2)).toMatchObject({ status: 'duplicate', duplicate_of: ids[0], identity_source: 'body_sha256' });
    expect(seen.at(-3)).toMatchObject({ status: 'rejected_auth', reason: 'the bearer token is wrong' });
    expect(seen[0]).toMatchObject({
      status: 'accepted',
      sender_delivery_id: 'evt-9',
      identity_source: 'agentyard_header',
    });
    for (const d of seen) expect(Date.parse(d.received_at)).not.toBeNaN();
    for (const d of seen) expect(d).not.toHaveProperty('payload');

    expect((await server.api('GET', `/webhooks/${hook.uid}/deliveries?cursor=garbage`)).status).toBe(400);
  });

  it('shows one delivery with its stored payload and the runs it started; rejected ones have metadata only', async () => {
    const factoryId = await seedFactory(server);
    const hook = await seedWebhook(server, { factoryId });
    const automationId = await seedAutomation(server, {
      factoryId,
      name: 'logger',
      triggers: [{ webhookUid: hook.uid }],
    });
    const body = '{ "exact":  "bytes" }';
    const accepted = await post(hook.url, body, { authorization: `Bearer ${hook.secret}` });
    await waitEvaluated(server, [accepted.body.delivery_id]);
    const detail = await server.api('GET', `/webhooks/${hook.uid}/deliveries/${accepted.body.delivery_id}`);
    expect(detail.status).toBe(200);
    expect(detail.body).toMatchObject({
      label: 'Accepted',
      payload: { exact: 'bytes' },
      evaluation: 'evaluated',
      runs: [{ automation_id: automationId }],
    });
    const run = await server.api('GET', `/agent/runs/${detail.body.runs[0].run_id}`);
    expect(run.body.delivery_id).toBe(accepted.body.delivery_id);

    const raw = await fetch(`${server.apiUrl}/webhooks/${hook.uid}/deliveries/${accepted.body.delivery_id}/payload`, {
      headers: { authorization: `Bearer ${server.adminKey}` },
    });
    expect(raw.status).toBe(200);
    expect(raw.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await raw.text()).toBe(body);

    const rejected = await post(hook.url, '{"x":1}', { authorization: 'Bearer wrong' });
    const rejectedDetail = await server.api('GET', `/webhooks/${hook.uid}/deliveries/${rejected.body.delivery_id}`);
    expect(rejectedDetail.body).toMatchObject({ label: 'Rejected (auth)', runs: [] });
    expect(rejectedDetail.body).not.toHaveProperty('payload');
    expect(
      (await server.api('GET', `/webhooks/${hook.uid}/deliveries/${rejected.body.delivery_id}/payload`)).status,
    ).toBe(404);
    expect((await server.api('GET', `/webhooks/${hook.uid}/deliveries/dlv_00000000000000000000000000`)).status).toBe(
      404,
    );
  });

  it("keeps a deleted webhook's history readable", async () => {
    const hook = await seedWebhook(server);
    const accepted = await post(hook.url, '{"before":"delete"}', { authorization: `Bearer ${hook.secret}` });
    await updateWebhook(server, hook, { deleted: true });
    const list = await server.api('GET', `/webhooks/${hook.uid}/deliveries`);
    expect(list.body.deliveries.map((d: { delivery_id: string }) => d.delivery_id)).toEqual([
      accepted.body.delivery_id,
    ]);
  });

  it("answers 404 for another team's webhook and for an unknown one", async () => {
    const hook = await seedWebhook(server);
    const teamB = await server.api('POST', '/teams', { name: `team-${hook.uid.slice(-6)}` });
    const keyB = teamB.body.admin_key.key as string;
    expect((await server.api('GET', `/webhooks/${hook.uid}/deliveries`, undefined, keyB)).status).toBe(404);
    expect((await server.api('GET', '/webhooks/wh_00000000000000000000000000/deliveries')).status).toBe(404);
  });
});
