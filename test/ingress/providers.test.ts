/**
 * Each provider end to end over HTTP: a delivery signed by the provider's own npm library where one exists
 * (standardwebhooks, svix, stripe, @octokit/webhooks-methods, twilio, tweetnacl for Discord), otherwise with
 * node:crypto from the provider's documentation, is accepted with the provider's delivery ID as its identity;
 * the same request signed with another secret is Rejected (auth).
 */
import { createHmac, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';
import Stripe from 'stripe';
import { sign as octokitSign } from '@octokit/webhooks-methods';
import twilioLib from 'twilio';
import nacl from 'tweetnacl';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { deliveriesOf, post, seedWebhook } from './support.ts';

const stripe = new Stripe('sk_test_not_used_offline');
const unix = (at: Date) => Math.floor(at.getTime() / 1000);
const hex = (n: number) => randomBytes(n).toString('hex');
const hmac = (alg: string, key: string, data: Buffer, enc: 'hex' | 'base64') =>
  createHmac(alg, key).update(data).digest(enc);
const whsec = () => `whsec_${randomBytes(32).toString('base64')}`;

interface Provider {
  scheme: string;
  secret(): { secret: string; wrong: string; signingKey?: Uint8Array; wrongKey?: Uint8Array };
  /** Headers (and optionally a query string) for `body` sent to `url`, signed with `key`. */
  sign(
    key: { secret: string; signingKey?: Uint8Array },
    body: Buffer,
    url: string,
  ): Promise<{ headers: Record<string, string>; query?: string }> | { headers: Record<string, string>; query?: string };
  deliveryId?: string;
}

const plain = () => ({ secret: hex(20), wrong: hex(20) });

const PROVIDERS: Provider[] = [
  {
    scheme: 'standard_webhooks',
    secret: () => ({ secret: whsec(), wrong: whsec() }),
    sign: ({ secret }, body) => {
      const at = new Date();
      return {
        headers: {
          'webhook-id': 'msg_std',
          'webhook-timestamp': String(unix(at)),
          'webhook-signature': new StandardWebhook(secret).sign('msg_std', at, body.toString()),
        },
      };
    },
    deliveryId: 'msg_std',
  },
  {
    scheme: 'standard_webhooks',
    secret: () => ({ secret: whsec(), wrong: whsec() }),
    sign: ({ secret }, body) => {
      const at = new Date();
      return {
        headers: {
          'svix-id': 'msg_svix',
          'svix-timestamp': String(unix(at)),
          'svix-signature': new SvixWebhook(secret).sign('msg_svix', at, body.toString()),
        },
      };
    },
    deliveryId: 'msg_svix',
  },
  {
    scheme: 'stripe',
    secret: () => ({ secret: `whsec_${hex(16)}`, wrong: `whsec_${hex(16)}` }),
    sign: ({ secret }, body) => ({
      headers: { 'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload: body.toString(), secret }) },
    }),
  },
  {
    scheme: 'github',
    secret: plain,
    sign: async ({ secret }, body) => ({
      headers: {
        'x-hub-signature-256': await octokitSign(secret, body.toString()),
        'x-github-delivery': 'gh-delivery-1',
        'x-github-event': 'issues',
      },
    }),
    deliveryId: 'gh-delivery-1',
  },
  {
    scheme: 'gitlab',
    secret: plain,
    sign: ({ secret }) => ({
      headers: { 'x-gitlab-token': secret, 'idempotency-key': 'gl-idem-1', 'x-gitlab-event': 'Push Hook' },
    }),
    deliveryId: 'gl-idem-1',
  },
  {
    scheme: 'slack',
    secret: plain,
    sign: ({ secret }, body) => {
      const ts = String(unix(new Date()));
      return {
        headers: {
          'x-slack-request-timestamp': ts,
          'x-slack-signature': `v0=${hmac('sha256', secret, Buffer.concat([Buffer.from(`v0:${ts}:`), body]), 'hex')}`,
        },
      };
    },
  },
  {
    scheme: 'shopify',
    secret: plain,
    sign: ({ secret }, body) => ({
      headers: { 'x-shopify-hmac-sha256': hmac('sha256', secret, body, 'base64'), 'x-shopify-webhook-id': 'shop-1' },
    }),
    deliveryId: 'shop-1',
  },
  {
    scheme: 'linear',
    secret: () => ({ secret: `lin_wh_${hex(16)}`, wrong: `lin_wh_${hex(16)}` }),
    sign: ({ secret }, body) => ({
      headers: { 'linear-signature': hmac('sha256', secret, body, 'hex'), 'linear-delivery': 'lin-1' },
    }),
    deliveryId: 'lin-1',
  },
  {
    scheme: 'sentry',
    secret: plain,
    sign: ({ secret }, body) => ({
      headers: { 'sentry-hook-signature': hmac('sha256', secret, body, 'hex'), 'request-id': 'sentry-1' },
    }),
    deliveryId: 'sentry-1',
  },
  {
    scheme: 'pagerduty',
    secret: plain,
    sign: ({ secret }, body) => ({
      headers: { 'x-pagerduty-signature': `v1=${hmac('sha256', secret, body, 'hex')}`, 'x-webhook-id': 'pd-1' },
    }),
    deliveryId: 'pd-1',
  },
  {
    scheme: 'vercel',
    secret: plain,
    sign: ({ secret }, body) => ({ headers: { 'x-vercel-signature': hmac('sha1', secret, body, 'hex') } }),
  },
  {
    scheme: 'intercom',
    secret: plain,
    sign: ({ secret }, body) => ({ headers: { 'x-hub-signature': `sha1=${hmac('sha1', secret, body, 'hex')}` } }),
  },
  {
    scheme: 'twilio',
    secret: plain,
    // Twilio signs the URL it calls; a JSON body is bound through the bodySHA256 query parameter.
    sign: ({ secret }, body, url) => {
      const query = `bodySHA256=${twilioLib.getExpectedBodyHash(body.toString())}`;
      return {
        query,
        headers: {
          'x-twilio-signature': twilioLib.getExpectedTwilioSignature(secret, `${url}?${query}`, {}),
          'i-twilio-idempotency-token': 'tw-1',
        },
      };
    },
    deliveryId: 'tw-1',
  },
  {
    scheme: 'discord',
    secret: () => {
      const pair = nacl.sign.keyPair();
      const other = nacl.sign.keyPair();
      return {
        secret: Buffer.from(pair.publicKey).toString('hex'),
        signingKey: pair.secretKey,
        wrong: Buffer.from(other.publicKey).toString('hex'),
        wrongKey: other.secretKey,
      };
    },
    sign: ({ signingKey }, body) => {
      const ts = String(unix(new Date()));
      const signature = nacl.sign.detached(Buffer.concat([Buffer.from(ts), body]), signingKey!);
      return {
        headers: { 'x-signature-ed25519': Buffer.from(signature).toString('hex'), 'x-signature-timestamp': ts },
      };
    },
  },
];

describe.each(ENGINES)('provider signatures end to end on %s', (engine) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(engine);
  });
  afterAll(async () => server?.close());

  it.each(PROVIDERS.map((p, i) => [`${p.scheme}${i === 1 ? ' (svix headers)' : ''}`, p] as const))(
    '%s',
    async (_label, provider) => {
      const keys = provider.secret();
      const hook = await seedWebhook(server, {
        authMode: 'signature',
        signatureScheme: provider.scheme,
        secret: keys.secret,
      });
      // webhookTimestamp: Linear signs its time into every body (the others ignore the member).
      const body = Buffer.from(
        JSON.stringify({ type: 1, action: 'opened', n: randomBytes(4).toString('hex'), webhookTimestamp: Date.now() }),
      );
      const good = await provider.sign(
        { secret: keys.secret, ...(keys.signingKey ? { signingKey: keys.signingKey } : {}) },
        body,
        hook.url,
      );
      const accepted = await post(good.query ? `${hook.url}?${good.query}` : hook.url, body, {
        'content-type': 'application/json',
        ...good.headers,
      });
      expect(accepted.status, accepted.text).toBe(202);

      const wrong = await provider.sign(
        { secret: keys.wrong, ...(keys.wrongKey ? { signingKey: keys.wrongKey } : {}) },
        body,
        hook.url,
      );
      const refused = await post(wrong.query ? `${hook.url}?${wrong.query}` : hook.url, body, {
        'content-type': 'application/json',
        ...wrong.headers,
      });
      expect(refused.status).toBe(401);
      expect(refused.body.code).toBe('webhook_unauthorized');

      const rows = await deliveriesOf(server, hook.uid);
      expect(rows.map((r) => r.label)).toEqual(['accepted', 'rejected_auth']);
      if (provider.deliveryId)
        expect(rows[0]).toMatchObject({ identity: provider.deliveryId, identity_source: 'provider' });
      else expect(rows[0]!.identity_source).toBe('body_sha256');
    },
  );
});
