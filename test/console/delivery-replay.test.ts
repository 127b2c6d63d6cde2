/**
 * Replaying a delivery from the console on real HTTP: the button on an accepted delivery's page asks first,
 * the POST answers a redirect to the replay's page (a reload posts nothing again), and that page names the
 * original and shows the run the replay started.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { createManagedFactory } from '../factories/support.ts';
import { post } from '../ingress/support.ts';
import { runsOfDeliveries, waitEvaluated } from '../automations/support.ts';
import { get, postForm, signIn } from './support.ts';
import type { Session } from './support.ts';

describe.each(ENGINES)('replaying a delivery in the console on %s', (engine) => {
  let server: TestServer;
  let admin: Session;
  beforeAll(async () => {
    server = await startTestServer(engine);
    admin = await signIn(server, server.adminKey);
  });
  afterAll(async () => server?.close());

  it('asks, replays, redirects to the replay, and a reload repeats nothing', async () => {
    const factoryId = await createManagedFactory(server);
    const hook = (await server.api('POST', `/factories/${factoryId}/webhooks`, { name: 'orders' })).body;
    const sent = await post(hook.ingress_url, '{"size":"large"}', { authorization: `Bearer ${hook.secret}` });
    const original = sent.body.delivery_id as string;
    await waitEvaluated(server, [original]);
    const automation = await server.api('POST', `/factories/${factoryId}/automations`, {
      name: 'big-orders',
      prompt: 'Check the large order.',
      triggers: [{ provider: 'webhook', event: 'received', filter: { webhook_ids: [hook.uid] } }],
    });
    expect(automation.status, automation.text).toBe(201);

    const base = `/console/webhooks/${hook.uid}/deliveries/${original}`;
    const page = await get(server, base, admin.cookie);
    expect(page.status).toBe(200);
    expect(page.text).toContain(`href="${base}/replay">Replay…</a>`);

    const confirm = await get(server, `${base}/replay`, admin.cookie);
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain(`Replay delivery ${original}?`);
    expect(confirm.text).toContain(`action="${base}/replay"`);
    // Asking replays nothing.
    expect((await server.api('GET', `/webhooks/${hook.uid}/deliveries`)).body.deliveries).toHaveLength(1);

    const done = await postForm(server, `${base}/replay`, { csrf: admin.csrf }, admin.cookie);
    expect(done.status).toBe(303);
    const location = done.headers.get('location')!;
    const replay = /\/deliveries\/(dlv_[^/?]+)\?done=replay$/.exec(location)![1]!;
    expect(replay).not.toBe(original);
    await waitEvaluated(server, [replay]);
    const [run] = await runsOfDeliveries(server, [replay]);
    expect(run?.automation_id).toBe(automation.body.id);

    const replayPage = await get(server, location, admin.cookie);
    expect(replayPage.status).toBe(200);
    expect(replayPage.text).toContain('role="status">This is a replay');
    expect(replayPage.text).toContain(`<dt>Replay of</dt><dd><a href="${base}"><code>${original}</code></a>`);
    expect(replayPage.text).toContain(`href="/console/runs/${run!.id}"`);
    // A reload of the replay's page is a GET: still one replay.
    await get(server, location, admin.cookie);
    expect((await server.api('GET', `/webhooks/${hook.uid}/deliveries`)).body.deliveries).toHaveLength(2);
  });

  it('offers no button to members nor on a rejected delivery, and a refused replay says why', async () => {
    const factoryId = await createManagedFactory(server);
    const hook = (await server.api('POST', `/factories/${factoryId}/webhooks`, { name: 'alerts' })).body;
    const accepted = (await post(hook.ingress_url, '{"a":1}', { authorization: `Bearer ${hook.secret}` })).body
      .delivery_id as string;
    const rejected = (await post(hook.ingress_url, '{"a":1}', { authorization: 'Bearer wrong' })).body
      .delivery_id as string;

    const rejectedBase = `/console/webhooks/${hook.uid}/deliveries/${rejected}`;
    expect((await get(server, rejectedBase, admin.cookie)).text).not.toContain('Replay…');
    const refused = await postForm(server, `${rejectedBase}/replay`, { csrf: admin.csrf }, admin.cookie);
    expect(refused.status).toBe(303);
    expect(refused.headers.get('location')).toBe(`${rejectedBase}?failed=replay-refused`);
    expect((await get(server, refused.headers.get('location')!, admin.cookie)).text).toContain(
      'Only an accepted delivery, with its payload, can be replayed.',
    );

    const key = (await server.api('POST', '/api-keys', { name: 'console member', role: 'member' })).body.key as string;
    const member = await signIn(server, key);
    const acceptedBase = `/console/webhooks/${hook.uid}/deliveries/${accepted}`;
    expect((await get(server, acceptedBase, member.cookie)).text).not.toContain('Replay…');
    const denied = await postForm(server, `${acceptedBase}/replay`, { csrf: member.csrf }, member.cookie);
    expect(denied.headers.get('location')).toBe(`${acceptedBase}?failed=replay-denied`);
    // Without the form's CSRF token nothing is replayed.
    const forged = await postForm(server, `${acceptedBase}/replay`, {}, admin.cookie);
    expect(forged.status).toBe(403);
    expect((await server.api('GET', `/webhooks/${hook.uid}/deliveries`)).body.deliveries).toHaveLength(2);
  });
});
