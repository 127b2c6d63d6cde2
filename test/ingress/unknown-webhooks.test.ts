/**
 * A webhook is live as soon as its apply has committed: a delivery that arrives before the notice that reloads
 * the ingress's snapshot finds it in the database. Made-up UIDs cost the database at most
 * UNKNOWN_LOOKUPS_PER_SECOND look-ups a second, however many arrive.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { UNKNOWN_LOOKUPS_PER_SECOND } from '../../src/ingress/routing.ts';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { post, seedWebhook } from './support.ts';

describe.each(ENGINES)('webhooks the ingress has not heard of yet, on %s', (engine) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(engine);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('accepts a delivery to a webhook committed a moment ago, before the snapshot is told', async () => {
    const hook = await seedWebhook(server, { tell: false });
    expect(server.server.ctx.routing?.get(hook.uid)).toBeUndefined();
    const res = await post(hook.url, '{"early":true}', { authorization: `Bearer ${hook.secret}` });
    expect(res.status, res.text).toBe(202);
    expect(res.body.delivery_id).toMatch(/^dlv_/);
  });

  it('looks up made-up UIDs at most UNKNOWN_LOOKUPS_PER_SECOND times a second', async () => {
    const routing = server.server.ctx.routing!;
    const recheck = vi.spyOn(routing, 'recheck');
    try {
      const started = performance.now();
      const answers = await Promise.all(
        Array.from({ length: 100 }, () =>
          post(`${server.url}/webhooks/w/wh_${randomBytes(13).toString('hex')}`, '{}', { authorization: 'Bearer x' }),
        ),
      );
      const seconds = (performance.now() - started) / 1000;
      expect(new Set(answers.map((a) => a.status))).toEqual(new Set([404]));
      expect(answers[0]!.body.code).toBe('webhook_not_found');
      expect(recheck.mock.calls.length).toBeGreaterThan(0);
      expect(recheck.mock.calls.length).toBeLessThanOrEqual(UNKNOWN_LOOKUPS_PER_SECOND * Math.ceil(seconds + 1));
    } finally {
      recheck.mockRestore();
    }
  });
});
