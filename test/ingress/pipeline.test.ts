/**
 * The ingress pipeline over real HTTP, on both engines: every row of the spec's delivery-label and error
 * tables, each auth mode, the limits, dedupe and the identity order, and changes while requests are in flight.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { WEBHOOK_BODY_LIMIT } from '../../src/ingress/limits.ts';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { deliveriesOf, post, send, seedWebhook, updateWebhook } from './support.ts';
import type { SeededWebhook } from './support.ts';

const bearer = (hook: SeededWebhook) => ({ authorization: `Bearer ${hook.secret}` });
const whsec = () => `whsec_${randomBytes(32).toString('base64')}`;

/** A JSON document of exactly `size` bytes. */
function jsonOfSize(size: number): Buffer {
  const overhead = '{"pad":""}'.length;
  return Buffer.from(`{"pad":"${'x'.repeat(size - overhead)}"}`);
}

describe.each(ENGINES)('webhook ingress on %s', (engine) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(engine);
  });
  afterAll(async () => server?.close());

  describe('Accepted', () => {
    it('answers 202 {delivery_id} only once the delivery is logged with its exact bytes', async () => {
      const hook = await seedWebhook(server);
      const body = Buffer.from('{ "action": "opened",\n  "note": "h\\u00e9llo ✓" }');
      const res = await post(hook.url, body, {
        ...bearer(hook),
        'content-type': 'application/json',
        'user-agent': 'sender/1.0',
      });
      expect(res.status).toBe(202);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(Object.keys(res.body)).toEqual(['delivery_id']);
      expect(res.body.delivery_id).toMatch(/^dlv_[0-9a-z]{26}$/);
      const [row] = await deliveriesOf(server, hook.uid);
      // No automation subscribes to this webhook: there is nothing to evaluate, so it never enters the outbox.
      expect(row).toMatchObject({
        id: res.body.delivery_id,
        label: 'accepted',
        size: body.length,
        outbox_pending: false,
      });
      expect(Buffer.from(row!.payload!).equals(body)).toBe(true);
      expect(row!.headers).toEqual({ 'content-type': 'application/json', 'user-agent': 'sender/1.0' });
    });

    it('takes any JSON value with any Content-Type, a mangled one, or none', async () => {
      const hook = await seedWebhook(server);
      const cases: [string, Record<string, string>][] = [
        ['{"k":"v"}', { 'content-type': 'text/plain' }],
        ['[1,2,3]', {}],
        ['42', { 'content-type': 'application/xml' }],
        ['"just a string"', { 'content-type': ';;; not a media type' }],
        ['null', { 'content-type': 'application/x-www-form-urlencoded' }],
        ['true', { 'content-type': 'application/json; charset=utf-8' }],
        [' \n{"spaced": true}\n ', { 'content-type': 'application/octet-stream' }],
        // RFC 8259 lets a parser skip a byte-order mark; the stored bytes keep it.
        ['\ufeff{"bom": true}', {}],
      ];
      for (const [body, headers] of cases) {
        const res = await post(hook.url, body, { ...bearer(hook), ...headers });
        expect(res.status, `${body} as ${JSON.stringify(headers)}`).toBe(202);
      }
      const rows = await deliveriesOf(server, hook.uid);
      expect(rows.map((r) => r.label)).toEqual(cases.map(() => 'accepted'));
      expect(rows.map((r) => Buffer.from(r.payload!).toString())).toEqual(cases.map(([b]) => b));
    });
  });

  describe('Rejected (invalid JSON) → 400', () => {
    it.each([
      ['not JSON', Buffer.from('action=opened')],
      ['truncated JSON', Buffer.from('{"a":')],
      ['an empty body', Buffer.alloc(0)],
      ['invalid UTF-8', Buffer.from([0x22, 0xff, 0xfe, 0x22])],
      ['only a byte-order mark', Buffer.from('\ufeff')],
    ])('%s is logged with metadata only', async (_name, body) => {
      const hook = await seedWebhook(server);
      const res = await post(hook.url, body, bearer(hook));
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body).toMatchObject({ status: 400, code: 'invalid_json' });
      const [row] = await deliveriesOf(server, hook.uid);
      expect(row).toMatchObject({
        id: res.body.delivery_id,
        label: 'rejected_invalid_json',
        size: body.length,
        payload: null,
        outbox_pending: false,
      });
    });
  });

  describe('Rejected (too large) → 413', () => {
    it(`accepts exactly ${WEBHOOK_BODY_LIMIT} bytes and refuses one byte more`, async () => {
      const hook = await seedWebhook(server);
      const atLimit = await post(hook.url, jsonOfSize(WEBHOOK_BODY_LIMIT), bearer(hook));
      expect(atLimit.status).toBe(202);
      const over = await post(hook.url, jsonOfSize(WEBHOOK_BODY_LIMIT + 1), bearer(hook));
      expect(over.status).toBe(413);
      expect(over.body).toMatchObject({ code: 'payload_too_large', detail: expect.stringContaining('262144 bytes') });
      // the rest of the body may still be on its way: the connection is not reused
      expect(over.headers.connection).toBe('close');
      const rows = await deliveriesOf(server, hook.uid);
      expect(rows.map((r) => [r.label, r.size])).toEqual([
        ['accepted', WEBHOOK_BODY_LIMIT],
        ['rejected_too_large', WEBHOOK_BODY_LIMIT + 1],
      ]);
      expect(rows[1]!.payload).toBeNull();
    });

    it('stops reading a chunked body without Content-Length at the limit', async () => {
      const hook = await seedWebhook(server);
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      const res = await post(hook.url, Buffer.alloc(0), bearer(hook), {
        chunks: Array.from({ length: 8 }, () => chunk),
      });
      expect(res.status).toBe(413);
      const [row] = await deliveriesOf(server, hook.uid);
      expect(row).toMatchObject({ label: 'rejected_too_large', payload: null });
    });

    it('checks the size before authentication', async () => {
      const hook = await seedWebhook(server);
      const res = await post(hook.url, jsonOfSize(WEBHOOK_BODY_LIMIT + 10), { authorization: 'Bearer wrong' });
      expect(res.status).toBe(413);
    });
  });

  describe('Rejected (auth) → 401', () => {
    it('refuses a wrong, missing or malformed bearer token', async () => {
      const hook = await seedWebhook(server);
      const attempts: Record<string, string>[] = [
        { authorization: 'Bearer wrong' },
        {},
        { authorization: `Basic ${hook.secret}` },
        { authorization: `Bearer ${hook.secret}x` },
      ];
      for (const headers of attempts) {
        const res = await post(hook.url, '{"a":1}', headers);
        expect(res.status).toBe(401);
        expect(res.body).toMatchObject({ code: 'webhook_unauthorized', status: 401 });
        expect(res.text).not.toContain(hook.secret!);
      }
      const rows = await deliveriesOf(server, hook.uid);
      expect(rows.map((r) => r.label)).toEqual(['rejected_auth', 'rejected_auth', 'rejected_auth', 'rejected_auth']);
      expect(rows.every((r) => r.payload === null)).toBe(true);
    });

    it('accepts "bearer" in any case and surrounding spaces', async () => {
      const hook = await seedWebhook(server);
      const res = await post(hook.url, '{"a":2}', { authorization: `bearer   ${hook.secret} ` });
      expect(res.status).toBe(202);
    });

    it('rejects everything while the webhook has no secret yet', async () => {
      const hook = await seedWebhook(server, {
        authMode: 'signature',
        signatureScheme: 'standard_webhooks',
        secret: null,
      });
      const res = await post(hook.url, '{"a":1}', {
        'webhook-id': 'msg_1',
        'webhook-timestamp': '1',
        'webhook-signature': 'v1,AAAA',
      });
      expect(res.status).toBe(401);
      expect(res.body.detail).toContain('no secret yet');
      const token = await seedWebhook(server, { secret: null });
      expect((await post(token.url, '{}', { authorization: 'Bearer ' })).status).toBe(401);
    });

    it('logs the sender delivery ID of a rejected delivery when a header names one', async () => {
      const hook = await seedWebhook(server);
      await post(hook.url, '{"a":1}', { authorization: 'Bearer wrong', 'x-agentyard-delivery-id': 'evt-77' });
      const [row] = await deliveriesOf(server, hook.uid);
      expect(row).toMatchObject({ label: 'rejected_auth', sender_delivery_id: 'evt-77' });
    });
  });

  describe('url_token mode', () => {
    it('takes the secret as the last path segment', async () => {
      const hook = await seedWebhook(server, { authMode: 'url_token', secret: 'tok-ABC_123.~' });
      expect((await post(`${hook.url}/tok-ABC_123.~`, '{"a":1}')).status).toBe(202);
      const wrong = await post(`${hook.url}/tok-ABC_124.~`, '{"a":1}');
      expect(wrong.status).toBe(401);
      expect(wrong.body.instance).toBe(`/webhooks/w/${hook.uid}/[redacted]`);
      expect(wrong.text).not.toContain('tok-ABC');
      expect((await post(hook.url, '{"a":1}')).status).toBe(401);
      const rows = await deliveriesOf(server, hook.uid);
      expect(rows.map((r) => r.label)).toEqual(['accepted', 'rejected_auth', 'rejected_auth']);
    });

    it('answers 404 to a token segment on a webhook of another mode', async () => {
      const hook = await seedWebhook(server);
      const res = await post(`${hook.url}/${hook.secret}`, '{"a":1}', bearer(hook));
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('webhook_not_found');
    });
  });

  describe('signature mode (Standard Webhooks)', () => {
    const signed = (secret: string, body: string, id: string, at = new Date()) => ({
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': new StandardWebhook(secret).sign(id, at, body),
    });

    it('accepts a signature made by the standardwebhooks library, refuses unsigned, forged and stale ones', async () => {
      const secret = whsec();
      const hook = await seedWebhook(server, { authMode: 'signature', signatureScheme: 'standard_webhooks', secret });
      const body = '{"type":"invoice.paid"}';
      expect((await post(hook.url, body, signed(secret, body, 'msg_ok'))).status).toBe(202);
      const unsigned = await post(hook.url, body, {});
      expect(unsigned.status).toBe(401);
      const forged = await post(hook.url, body, signed(whsec(), body, 'msg_forged'));
      expect(forged.status).toBe(401);
      const stale = await post(hook.url, body, signed(secret, body, 'msg_stale', new Date(Date.now() - 6 * 60_000)));
      expect(stale.status).toBe(401);
      expect(stale.body.detail).toMatch(/old/);
      const tampered = await post(hook.url, '{"type":"invoice.paid" }', signed(secret, body, 'msg_tampered'));
      expect(tampered.status).toBe(401);
      const rows = await deliveriesOf(server, hook.uid);
      expect(rows.map((r) => r.label)).toEqual([
        'accepted',
        'rejected_auth',
        'rejected_auth',
        'rejected_auth',
        'rejected_auth',
      ]);
      expect(rows[0]).toMatchObject({ identity: 'msg_ok', identity_source: 'provider' });
    });
  });

  describe('404', () => {
    it('answers 404 for an unknown UID, a malformed UID, a disabled and a deleted webhook', async () => {
      const hook = await seedWebhook(server);
      for (const url of [
        `${server.url}/webhooks/w/wh_01aaaaaaaaaaaaaaaaaaaaaaaa`,
        `${server.url}/webhooks/w/not-a-uid`,
        `${hook.url}x`,
      ]) {
        const res = await post(url, '{}', bearer(hook));
        expect(res.status).toBe(404);
        expect(res.body).toMatchObject({ code: 'webhook_not_found', status: 404 });
      }
      const disabled = await seedWebhook(server, { enabled: false });
      expect((await post(disabled.url, '{}', bearer(disabled))).status).toBe(404);
      expect(await deliveriesOf(server, disabled.uid)).toEqual([]);
    });

    it('disable answers 404 at once and keeps the history; enable resumes; delete answers 404', async () => {
      const hook = await seedWebhook(server);
      expect((await post(hook.url, '{"n":1}', bearer(hook))).status).toBe(202);
      await updateWebhook(server, hook, { enabled: false });
      expect((await post(hook.url, '{"n":2}', bearer(hook))).status).toBe(404);
      await updateWebhook(server, hook, { enabled: true });
      expect((await post(hook.url, '{"n":3}', bearer(hook))).status).toBe(202);
      await updateWebhook(server, hook, { deleted: true });
      expect((await post(hook.url, '{"n":4}', bearer(hook))).status).toBe(404);
      expect((await deliveriesOf(server, hook.uid)).map((r) => r.label)).toEqual(['accepted', 'accepted']);
    });
  });

  describe('405', () => {
    it.each(['GET', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])('%s answers 405 with Allow: POST', async (method) => {
      const hook = await seedWebhook(server);
      const res = await send(hook.url, method, method === 'GET' ? undefined : '{}', bearer(hook));
      expect(res.status).toBe(405);
      expect(res.headers.allow).toBe('POST');
      expect(res.body.code).toBe('method_not_allowed');
    });

    it('HEAD answers 405 too, and every error names the trace of a traceparent header', async () => {
      const hook = await seedWebhook(server);
      expect((await send(hook.url, 'HEAD', undefined, bearer(hook))).status).toBe(405);
      const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
      const res = await post(`${hook.url}/extra/segment`, '{}', { traceparent: `00-${traceId}-00f067aa0ba902b7-01` });
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({
        code: 'route_not_found',
        trace_id: traceId,
        instance: `/webhooks/w/${hook.uid}/[redacted]/segment`,
      });
    });
  });

  describe('Duplicate and the identity order', () => {
    it('identical bodies without an ID are duplicates: 202, logged, nothing evaluated', async () => {
      const hook = await seedWebhook(server);
      const first = await post(hook.url, '{"same":true}', bearer(hook));
      const second = await post(hook.url, '{"same":true}', bearer(hook));
      expect([first.status, second.status]).toEqual([202, 202]);
      expect(second.body.delivery_id).not.toBe(first.body.delivery_id);
      const rows = await deliveriesOf(server, hook.uid);
      expect(rows.map((r) => [r.label, r.identity_source, r.outbox_pending])).toEqual([
        ['accepted', 'body_sha256', false],
        ['duplicate', 'body_sha256', false],
      ]);
      expect(rows[1]).toMatchObject({ duplicate_of: first.body.delivery_id, payload: null });
    });

    it('prefers the configured header, then the provider header, then X-Agentyard-Delivery-Id, then the body hash', async () => {
      const secret = whsec();
      const hook = await seedWebhook(server, {
        authMode: 'signature',
        signatureScheme: 'standard_webhooks',
        secret,
        deliveryIdHeader: 'X-Sender-Event',
      });
      const sign = (body: string, id: string) => {
        const at = new Date();
        return {
          'webhook-id': id,
          'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
          'webhook-signature': new StandardWebhook(secret).sign(id, at, body),
        };
      };
      await post(hook.url, '{"n":1}', {
        ...sign('{"n":1}', 'msg_a'),
        'x-sender-event': 'evt-1',
        'x-agentyard-delivery-id': 'ay-1',
      });
      await post(hook.url, '{"n":2}', { ...sign('{"n":2}', 'msg_b'), 'x-agentyard-delivery-id': 'ay-2' });
      const token = await seedWebhook(server);
      await post(token.url, '{"n":3}', {
        ...bearer(token),
        'x-agentyard-delivery-id': 'ay-3',
        'webhook-id': 'ignored-on-token-webhooks',
      });
      await post(token.url, '{"n":4}', bearer(token));
      const signedRows = await deliveriesOf(server, hook.uid);
      const tokenRows = await deliveriesOf(server, token.uid);
      expect([...signedRows, ...tokenRows].map((r) => [r.identity_source, r.identity, r.sender_delivery_id])).toEqual([
        ['delivery_id_header', 'evt-1', 'evt-1'],
        ['provider', 'msg_b', 'msg_b'],
        ['agentyard_header', 'ay-3', 'ay-3'],
        ['body_sha256', expect.stringMatching(/^sha256:[0-9a-f]{64}$/), null],
      ]);
    });

    it('the same sender ID with another body is a duplicate', async () => {
      const hook = await seedWebhook(server);
      await post(hook.url, '{"v":1}', { ...bearer(hook), 'x-agentyard-delivery-id': 'retry-1' });
      const again = await post(hook.url, '{"v":2}', { ...bearer(hook), 'x-agentyard-delivery-id': 'retry-1' });
      expect(again.status).toBe(202);
      expect((await deliveriesOf(server, hook.uid)).map((r) => r.label)).toEqual(['accepted', 'duplicate']);
    });

    it('identities are per webhook', async () => {
      const a = await seedWebhook(server);
      const b = await seedWebhook(server);
      await post(a.url, '{"shared":1}', bearer(a));
      await post(b.url, '{"shared":1}', bearer(b));
      expect((await deliveriesOf(server, a.uid)).map((r) => r.label)).toEqual(['accepted']);
      expect((await deliveriesOf(server, b.uid)).map((r) => r.label)).toEqual(['accepted']);
    });

    it('concurrent identical deliveries: exactly one is Accepted', async () => {
      const hook = await seedWebhook(server);
      const results = await Promise.all(
        Array.from({ length: 25 }, () =>
          post(hook.url, '{"burst":true}', { ...bearer(hook), 'x-agentyard-delivery-id': 'burst-1' }),
        ),
      );
      expect(results.map((r) => r.status)).toEqual(results.map(() => 202));
      const rows = await deliveriesOf(server, hook.uid);
      expect(rows.filter((r) => r.label === 'accepted')).toHaveLength(1);
      expect(rows.filter((r) => r.label === 'duplicate')).toHaveLength(24);
      const acceptedId = rows.find((r) => r.label === 'accepted')!.id;
      expect(rows.filter((r) => r.label === 'duplicate').every((r) => r.duplicate_of === acceptedId)).toBe(true);
    });
  });

  describe('metrics', () => {
    /** The value of agentyard_webhook_deliveries_total for a label on this server's /metrics (0 before the first). */
    const counted = async (label: string): Promise<number> => {
      const text = await (await fetch(`${server.url}/metrics`)).text();
      const line = text.split('\n').find((l) => l.startsWith(`agentyard_webhook_deliveries_total{label="${label}"} `));
      return line === undefined ? 0 : Number(line.split(' ')[1]);
    };

    it('counts each delivery it logs under its label once it is committed', async () => {
      const labels = ['accepted', 'duplicate', 'rejected_auth', 'rejected_invalid_json', 'rejected_too_large'];
      const before = await Promise.all(labels.map(counted));
      const hook = await seedWebhook(server);
      expect((await post(hook.url, '{"n":1}', bearer(hook))).status).toBe(202);
      expect((await post(hook.url, '{"n":2}', bearer(hook))).status).toBe(202);
      expect((await post(hook.url, '{"n":1}', bearer(hook))).status).toBe(202);
      expect((await post(hook.url, '{"n":3}', { authorization: 'Bearer wrong' })).status).toBe(401);
      expect((await post(hook.url, 'not json', bearer(hook))).status).toBe(400);
      expect((await post(hook.url, jsonOfSize(WEBHOOK_BODY_LIMIT + 1), bearer(hook))).status).toBe(413);
      const after = await Promise.all(labels.map(counted));
      expect(Object.fromEntries(labels.map((l, i) => [l, after[i]! - before[i]!]))).toEqual({
        accepted: 2,
        duplicate: 1,
        rejected_auth: 1,
        rejected_invalid_json: 1,
        rejected_too_large: 1,
      });
      const rows = await deliveriesOf(server, hook.uid);
      expect(rows.map((r) => r.label).sort()).toEqual([
        'accepted',
        'accepted',
        'duplicate',
        'rejected_auth',
        'rejected_invalid_json',
        'rejected_too_large',
      ]);
    });
  });

  describe('429', () => {
    it('allows 60 deliveries per minute from a sender, then answers 429 with Retry-After; other webhooks are unaffected', async () => {
      const hook = await seedWebhook(server);
      const statuses: number[] = [];
      for (let i = 0; i < 60; i++) statuses.push((await post(hook.url, `{"i":${i}}`, bearer(hook))).status);
      expect(statuses.every((s) => s === 202)).toBe(true);
      const limited = await post(hook.url, '{"i":60}', bearer(hook));
      expect(limited.status).toBe(429);
      expect(limited.body.code).toBe('webhook_rate_limited');
      const retryAfter = Number(limited.headers['retry-after']);
      expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60).toBe(true);
      expect((await deliveriesOf(server, hook.uid)).length).toBe(60);
      const other = await seedWebhook(server);
      expect((await post(other.url, '{}', bearer(other))).status).toBe(202);
    });

    it('70 deliveries from one sender at once: exactly 60 pass, 10 answer 429', async () => {
      const hook = await seedWebhook(server);
      const results = await Promise.all(
        Array.from({ length: 70 }, (_, i) => post(hook.url, `{"burst":${i}}`, bearer(hook))),
      );
      expect(results.filter((r) => r.status === 202)).toHaveLength(60);
      expect(results.filter((r) => r.status === 429)).toHaveLength(10);
      expect(await deliveriesOf(server, hook.uid)).toHaveLength(60);
    });

    it('after 20 failed authentications every request answers 429, the right credential too', async () => {
      const hook = await seedWebhook(server);
      for (let i = 0; i < 20; i++)
        expect((await post(hook.url, `{"i":${i}}`, { authorization: 'Bearer guess' })).status).toBe(401);
      for (const headers of [{ authorization: 'Bearer guess' }, bearer(hook)]) {
        const res = await post(hook.url, '{"after":true}', headers);
        expect(res.status).toBe(429);
        expect(res.body.code).toBe('webhook_auth_rate_limited');
        expect(Number(res.headers['retry-after'])).toBeGreaterThan(60);
      }
      expect((await deliveriesOf(server, hook.uid)).length).toBe(20);
    });
  });

  describe('changes while a request is in flight', () => {
    /** Settles when the server has the next request's headers (the change then comes while it is in flight). */
    const requestReceived = (): Promise<void> =>
      new Promise((resolve) => server.server.app.server.once('request', () => resolve()));

    it('rotation: a request authenticated with the old secret is refused; the new secret works at once, the old one never again', async () => {
      const hook = await seedWebhook(server);
      const oldSecret = hook.secret!;
      const newSecret = `rotated-${randomBytes(8).toString('hex')}`;
      const body = Buffer.from('{"in":"flight"}');
      const received = requestReceived();
      const res = await post(
        hook.url,
        Buffer.alloc(0),
        { authorization: `Bearer ${oldSecret}`, 'content-length': String(body.length) },
        {
          chunks: [body.subarray(0, 5), body.subarray(5)],
          midway: async () => {
            await received;
            await updateWebhook(server, hook, { secret: newSecret });
          },
        },
      );
      expect(res.status).toBe(401);
      expect((await post(hook.url, '{"after":1}', { authorization: `Bearer ${oldSecret}` })).status).toBe(401);
      expect((await post(hook.url, '{"after":2}', { authorization: `Bearer ${newSecret}` })).status).toBe(202);
      const rows = await deliveriesOf(server, hook.uid);
      expect(rows.map((r) => r.label)).toEqual(['rejected_auth', 'rejected_auth', 'accepted']);
    });

    it('disable and delete: a request in flight is not accepted', async () => {
      for (const change of [{ enabled: false }, { deleted: true }]) {
        const hook = await seedWebhook(server);
        const body = Buffer.from('{"in":"flight"}');
        const received = requestReceived();
        const res = await post(
          hook.url,
          Buffer.alloc(0),
          { ...bearer(hook), 'content-length': String(body.length) },
          {
            chunks: [body.subarray(0, 5), body.subarray(5)],
            midway: async () => {
              await received;
              await updateWebhook(server, hook, change);
            },
          },
        );
        expect(res.status).toBe(404);
        expect(await deliveriesOf(server, hook.uid)).toEqual([]);
      }
    });
  });
});
