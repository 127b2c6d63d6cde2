import { randomBytes } from 'node:crypto';
import { sign as octokitSign } from '@octokit/webhooks-methods';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { pushedBranch, verifyPushNotification } from '../../src/factories/push-hook.ts';

const now = new Date();
const body = Buffer.from(JSON.stringify({ ref: 'refs/heads/main', after: 'a'.repeat(40) }));

describe('push notifications are checked by the ingress signature schemes', () => {
  it("accepts GitHub's X-Hub-Signature-256 made by GitHub's own library, and refuses another secret's", async () => {
    const secret = 'push-s3cret';
    const signature = await octokitSign(secret, body.toString('utf8'));
    expect(verifyPushNotification({ 'x-hub-signature-256': signature }, body, secret, now)).toEqual({ ok: true });
    const forged = verifyPushNotification(
      { 'x-hub-signature-256': await octokitSign('other', body.toString('utf8')) },
      body,
      secret,
      now,
    );
    expect(forged).toMatchObject({ ok: false, reason: expect.stringContaining('x-hub-signature-256') });
    const notHex = verifyPushNotification({ 'x-hub-signature-256': 'sha256=zz' }, body, secret, now);
    expect(notHex).toMatchObject({ ok: false, reason: expect.stringContaining('hex') });
  });

  it("accepts GitLab's secret token, and its signing token as Standard Webhooks headers", () => {
    expect(verifyPushNotification({ 'x-gitlab-token': 'push-s3cret' }, body, 'push-s3cret', now)).toEqual({
      ok: true,
    });
    expect(verifyPushNotification({ 'x-gitlab-token': 'nope' }, body, 'push-s3cret', now).ok).toBe(false);

    const signingToken = `whsec_${randomBytes(32).toString('base64')}`;
    const id = 'msg_push_1';
    const signature = new StandardWebhook(signingToken).sign(id, now, body.toString('utf8'));
    const headers = {
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': signature,
    };
    expect(verifyPushNotification(headers, body, signingToken, now)).toEqual({ ok: true });
    const stale = verifyPushNotification(headers, body, signingToken, new Date(now.getTime() + 3_600_000));
    expect(stale).toMatchObject({ ok: false, reason: expect.stringMatching(/timestamp/) });
  });

  it('takes a bearer secret from other hosts and CI scripts', () => {
    expect(verifyPushNotification({ authorization: 'Bearer push-s3cret' }, body, 'push-s3cret', now)).toEqual({
      ok: true,
    });
    expect(verifyPushNotification({ authorization: 'bearer  push-s3cret ' }, body, 'push-s3cret', now).ok).toBe(true);
    expect(verifyPushNotification({ authorization: 'Bearer other' }, body, 'push-s3cret', now)).toEqual({
      ok: false,
      reason: 'the bearer secret is wrong',
    });
    expect(verifyPushNotification({}, body, 'push-s3cret', now)).toMatchObject({
      ok: false,
      reason: expect.stringContaining('X-Hub-Signature-256'),
    });
  });

  it('reads the pushed branch from GitHub and GitLab payloads', () => {
    expect(pushedBranch(body)).toBe('main');
    expect(pushedBranch(Buffer.from('{"ref":"refs/tags/v1"}'))).toBeUndefined();
    expect(pushedBranch(Buffer.from('not json'))).toBeUndefined();
  });
});
