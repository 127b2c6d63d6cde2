/**
 * The ingress served through a Fastify route (`ingress.throughFastify`, what bench/ingress-plugin.ts measures
 * against the direct path) answers as the direct path does.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WEBHOOK_BODY_LIMIT } from '../../src/ingress/limits.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { deliveriesOf, post, send, seedWebhook } from './support.ts';

describe('webhook ingress through a Fastify route on pglite', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer('pglite', { compose: { ingress: { throughFastify: true } } });
  });
  afterAll(async () => server?.close());

  it('accepts a delivery, refuses a wrong token, bad JSON, a large body and other methods', async () => {
    const hook = await seedWebhook(server);
    const bearer = { authorization: `Bearer ${hook.secret}` };
    const accepted = await post(hook.url, '{"a":1}', { ...bearer, 'content-type': 'application/json' });
    expect(accepted.status).toBe(202);
    expect(accepted.body.delivery_id).toMatch(/^dlv_/);

    expect((await post(hook.url, '{"a":1}', { authorization: 'Bearer wrong' })).body.code).toBe('webhook_unauthorized');
    expect((await post(hook.url, 'not json', bearer)).body.code).toBe('invalid_json');
    const large = await post(hook.url, Buffer.alloc(WEBHOOK_BODY_LIMIT + 1, 0x20), bearer);
    expect([large.status, large.body.code]).toEqual([413, 'payload_too_large']);
    const get = await send(hook.url, 'GET', undefined);
    expect([get.status, get.headers.allow]).toEqual([405, 'POST']);
    expect((await post(`${hook.url}x`, '{}', bearer)).body.code).toBe('webhook_not_found');

    const labels = (await deliveriesOf(server, hook.uid)).map((d) => d.label).sort();
    expect(labels).toEqual(['accepted', 'rejected_auth', 'rejected_invalid_json', 'rejected_too_large']);
  });
});
