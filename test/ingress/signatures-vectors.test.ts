/** Published test vectors (reference/webhook-providers.md) and the registry's data and helpers. */
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import {
  SIGNATURE_SCHEMES,
  SIGNATURE_SCHEME_IDS,
  generateSecretFor,
  getSignatureScheme,
  redactSecret,
} from '../../src/ingress/signatures/index.ts';
import type { VerifyInput } from '../../src/ingress/signatures/index.ts';
import { KNOWN_SIGNATURE_SCHEMES } from '../../src/definitions/signature-schemes.ts';

function verify(id: string, input: Omit<VerifyInput, 'url'> & { url?: string }) {
  const scheme = getSignatureScheme(id);
  if (!scheme) throw new Error(`no scheme ${id}`);
  return scheme.verify({ url: 'https://hooks.example.com/webhooks/w/x', ...input });
}

const SW = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: '1614265330',
  body: Buffer.from('{"test": 2432232314}'),
  v1: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
  seed: 'VEVTVFNJR05JTkdLRVlET05PVFVTRVRISVNGT1JBTlk=',
  publicKey: 'ZlN4eg7dSSqi0moX9hQUk3orrOouK3QVQSlJa248c/g=',
  v1a: 'v1a,tQ9V2XOqn7jL/DQenEFpqIugdBVtiMmER5mhSkXBNwM0mkATuDe6KYYUuxqtaiHeYGb7KaaBRdM5WqyeFiL8Ag==',
};
const swNow = new Date(Number(SW.timestamp) * 1000);

describe('published test vectors', () => {
  it('Standard Webhooks v1 (JS library test vector), with webhook-* and svix-* headers', () => {
    for (const prefix of ['webhook-', 'svix-']) {
      const headers = { [`${prefix}id`]: SW.id, [`${prefix}timestamp`]: SW.timestamp, [`${prefix}signature`]: SW.v1 };
      expect(verify('standard_webhooks', { rawBody: SW.body, headers, secret: SW.secret, now: swNow })).toEqual({
        ok: true,
        deliveryId: SW.id,
      });
    }
    // and the library computes the same value
    expect(new StandardWebhook(SW.secret).sign(SW.id, swNow, SW.body)).toBe(SW.v1);
  });

  it('Standard Webhooks v1 vector is stale today', () => {
    const headers = { 'webhook-id': SW.id, 'webhook-timestamp': SW.timestamp, 'webhook-signature': SW.v1 };
    expect(
      verify('standard_webhooks', { rawBody: SW.body, headers, secret: SW.secret, now: new Date() }),
    ).toMatchObject({
      ok: false,
      reason: 'stale_timestamp',
    });
  });

  it('Standard Webhooks v1a (Go library test vector) with the whpk_ public key derived from the seed', () => {
    const pkcs8 = Buffer.concat([
      Buffer.from('302e020100300506032b657004220420', 'hex'),
      Buffer.from(SW.seed, 'base64'),
    ]);
    const spki = createPublicKey(createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' })).export({
      format: 'der',
      type: 'spki',
    });
    expect(spki.subarray(-32).toString('base64')).toBe(SW.publicKey);

    const headers = {
      'webhook-id': SW.id,
      'webhook-timestamp': SW.timestamp,
      'webhook-signature': `${SW.v1} ${SW.v1a}`,
    };
    expect(
      verify('standard_webhooks', { rawBody: SW.body, headers, secret: `whpk_${SW.publicKey}`, now: swNow }),
    ).toEqual({
      ok: true,
      deliveryId: SW.id,
    });
    // A v1a entry does not satisfy an HMAC secret, nor a v1 entry an Ed25519 key.
    const v1aOnly = { ...headers, 'webhook-signature': SW.v1a };
    expect(
      verify('standard_webhooks', { rawBody: SW.body, headers: v1aOnly, secret: SW.secret, now: swNow }),
    ).toMatchObject({ ok: false });
    const v1Only = { ...headers, 'webhook-signature': SW.v1 };
    expect(
      verify('standard_webhooks', { rawBody: SW.body, headers: v1Only, secret: `whpk_${SW.publicKey}`, now: swNow }),
    ).toMatchObject({ ok: false });
  });

  it('GitHub (docs vector)', () => {
    const headers = {
      'x-hub-signature-256': 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17',
      'x-github-delivery': 'd1',
    };
    const result = verify('github', {
      rawBody: Buffer.from('Hello, World!'),
      headers,
      secret: "It's a Secret to Everybody",
      now: new Date(),
    });
    expect(result).toEqual({ ok: true, deliveryId: 'd1' });
  });

  it('Slack (docs vector, slash command form body)', () => {
    const body = Buffer.from(
      'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c',
    );
    const headers = {
      'x-slack-request-timestamp': '1531420618',
      'x-slack-signature': 'v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503',
    };
    const secret = '8f742231b10e8888abcd99yyyzzz85a5';
    expect(verify('slack', { rawBody: body, headers, secret, now: new Date(1531420618 * 1000 + 60_000) })).toEqual({
      ok: true,
    });
    expect(verify('slack', { rawBody: body, headers, secret, now: new Date() })).toMatchObject({
      ok: false,
      reason: 'stale_timestamp',
    });
  });

  it('Twilio (security docs vector, form parameters)', () => {
    const params = new URLSearchParams({
      CallSid: 'CA1234567890ABCDE',
      Caller: '+12349013030',
      Digits: '1234',
      From: '+12349013030',
      To: '+18005551212',
    });
    const headers = {
      'x-twilio-signature': '0/KCTR6DLpKmkAf8muzZqo1nDgQ=',
      'content-type': 'application/x-www-form-urlencoded',
    };
    const url = 'https://mycompany.com/myapp.php?foo=1&bar=2';
    expect(
      verify('twilio', { rawBody: Buffer.from(params.toString()), headers, secret: '12345', url, now: new Date() }),
    ).toEqual({ ok: true });
    expect(
      verify('twilio', {
        rawBody: Buffer.from(params.toString()),
        headers,
        secret: '12345',
        url: `${url}&baz=3`,
        now: new Date(),
      }),
    ).toMatchObject({
      ok: false,
      reason: 'bad_signature',
    });
  });

  it('Square (docs / SDK vector)', () => {
    const headers = { 'x-square-hmacsha256-signature': '2kRE5qRU2tR+tBGlDwMEw2avJ7QM4ikPYD/PJ3bd9Og=' };
    const input = { rawBody: Buffer.from('{"hello":"world"}'), headers, secret: 'asdf1234', now: new Date() };
    expect(verify('square', { ...input, url: 'https://example.com/webhook' })).toEqual({ ok: true });
    expect(verify('square', { ...input, url: 'https://example.com/webhook/' })).toMatchObject({
      ok: false,
      reason: 'bad_signature',
    });
  });

  it('Paddle (paddle-node-sdk test vector)', () => {
    const headers = {
      'paddle-signature': 'ts=1698796800;h1=a300428748dce5c70e4da19bffd60769591ea969c99dea3105d0ec9612cf43f9',
    };
    const input = { rawBody: Buffer.from('{"data": ["1", "2"]}'), headers, secret: 'VALID_SECRET' };
    expect(verify('paddle', { ...input, now: new Date(1698796800 * 1000 + 2000) })).toEqual({ ok: true });
    expect(verify('paddle', { ...input, now: new Date(1698796800 * 1000 + 10_000) })).toMatchObject({
      ok: false,
      reason: 'stale_timestamp',
    });
  });
});

const REQUIRED = [
  'standard_webhooks',
  'stripe',
  'github',
  'slack',
  'shopify',
  'linear',
  'sentry',
  'gitlab',
  'pagerduty',
  'vercel',
  'twilio',
  'intercom',
  'discord',
];

describe('the registry', () => {
  it('has every required scheme and every scheme the definition validator accepts', () => {
    for (const id of [...REQUIRED, ...KNOWN_SIGNATURE_SCHEMES]) expect(SIGNATURE_SCHEME_IDS).toContain(id);
    expect(Object.keys(SIGNATURE_SCHEMES)).toEqual([...SIGNATURE_SCHEME_IDS]);
    expect(SIGNATURE_SCHEME_IDS[0]).toBe('standard_webhooks');
  });

  it('describes each scheme consistently', () => {
    for (const [id, scheme] of Object.entries(SIGNATURE_SCHEMES)) {
      expect(scheme.id).toBe(id);
      expect(id).toMatch(/^[a-z][a-z0-9_]*$/);
      expect(scheme.displayName.length).toBeGreaterThan(0);
      for (const name of scheme.headers) expect(name).toBe(name.toLowerCase());
      expect(scheme.headers).toContain(scheme.signatureHeader);
      for (const name of scheme.deliveryIdHeaders) expect(scheme.headers).toContain(name);
      if (scheme.timestamp) expect(scheme.timestamp.toleranceSeconds).toBeGreaterThan(0);
      if ('header' in (scheme.timestamp?.source ?? {})) {
        expect(scheme.headers).toContain((scheme.timestamp!.source as { header: string }).header);
      }
      expect(scheme.docsUrl).toMatch(/^https:\/\//);
      expect(Object.isFrozen(SIGNATURE_SCHEMES)).toBe(true);
    }
  });

  it("uses the spec's five-minute signature age for Standard Webhooks and Stripe", () => {
    expect(SIGNATURE_SCHEMES.standard_webhooks!.timestamp?.toleranceSeconds).toBe(300);
    expect(SIGNATURE_SCHEMES.stripe!.timestamp?.toleranceSeconds).toBe(300);
  });

  it('looks up only its own ids', () => {
    expect(getSignatureScheme('github')?.id).toBe('github');
    for (const id of ['nope', '__proto__', 'constructor', 'toString', 'GitHub'])
      expect(getSignatureScheme(id)).toBeUndefined();
  });
});

describe('secrets', () => {
  it('generates a Standard Webhooks secret that the standardwebhooks library accepts and we verify', () => {
    const secret = generateSecretFor('standard_webhooks')!;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(secret.slice(6), 'base64').length).toBeGreaterThanOrEqual(24);
    expect(SIGNATURE_SCHEMES.standard_webhooks!.secret.check(secret)).toBeUndefined();
    expect(generateSecretFor('standard_webhooks')).not.toBe(secret);
    const now = new Date();
    const body = Buffer.from('{"ok":true}');
    const headers = {
      'webhook-id': 'm1',
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': new StandardWebhook(secret).sign('m1', now, body),
    };
    expect(verify('standard_webhooks', { rawBody: body, headers, secret, now }).ok).toBe(true);
  });

  it('generates secrets only where the sender takes one from us', () => {
    for (const id of ['github', 'gitlab', 'bitbucket', 'twitch', 'calendly', 'typeform']) {
      const secret = generateSecretFor(id);
      expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(getSignatureScheme(id)!.secret.check(secret!)).toBeUndefined();
    }
    for (const id of [
      'stripe',
      'slack',
      'shopify',
      'linear',
      'sentry',
      'pagerduty',
      'vercel',
      'twilio',
      'intercom',
      'discord',
      'zendesk',
      'square',
      'paddle',
    ]) {
      expect(generateSecretFor(id)).toBeUndefined();
    }
    expect(generateSecretFor('unknown')).toBeUndefined();
  });

  it('checks the format of configured secrets', () => {
    const check = (id: string, secret: string) => getSignatureScheme(id)!.secret.check(secret);
    expect(check('stripe', 'sk_live_x')).toMatch(/whsec_/);
    expect(check('stripe', 'whsec_abc')).toBeUndefined();
    expect(check('standard_webhooks', 'whsec_not base64!')).toMatch(/base64/);
    expect(check('standard_webhooks', `whsec_${Buffer.alloc(8).toString('base64')}`)).toMatch(/at least 24/);
    expect(check('standard_webhooks', `whpk_${Buffer.alloc(32, 1).toString('base64')}`)).toBeUndefined();
    expect(check('standard_webhooks', `whsk_${Buffer.alloc(32, 1).toString('base64')}`)).toMatch(/private/);
    expect(check('discord', 'ab'.repeat(32))).toBeUndefined();
    expect(check('discord', 'not-a-key')).toMatch(/64 hex/);
    expect(check('github', '')).toMatch(/empty/);
    expect(check('github', 'secret\n')).toMatch(/whitespace/);
  });
});

describe('redactSecret', () => {
  it('keeps a known prefix and at most the last four characters of a long secret', () => {
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    expect(redactSecret(secret)).toBe('whsec_…LaSw');
    expect(redactSecret('It is a long shared secret value')).toBe('…alue');
  });

  it('shows nothing of a short secret', () => {
    expect(redactSecret('hunter2')).toBe('…');
    expect(redactSecret('whsec_short')).toBe('whsec_…');
    expect(redactSecret('')).toBe('…');
  });
});
