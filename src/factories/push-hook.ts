import { bearerToken } from '../ingress/authenticate.ts';
import { SIGNATURE_SCHEMES, safeEqual } from '../ingress/signatures/index.ts';
import type { HeaderMap, SignatureScheme } from '../ingress/signatures/index.ts';

export type PushVerification = { ok: true } | { ok: false; reason: string };

/**
 * Does a push notification carry the factory's push secret? Checked by the ingress's own schemes: GitHub's
 * `X-Hub-Signature-256` (the `github` scheme), GitLab's `X-Gitlab-Token` or signing token (the `gitlab`
 * scheme); otherwise `Authorization: Bearer <secret>` (CI scripts, other hosts), as a `token` webhook takes it.
 */
export function verifyPushNotification(headers: HeaderMap, body: Buffer, secret: string, now: Date): PushVerification {
  const scheme = schemeOf(headers);
  if (scheme) {
    // Neither GitHub nor GitLab signs the URL.
    const result = scheme.verify({ rawBody: body, headers, secret, url: '', now });
    return result.ok ? { ok: true } : { ok: false, reason: result.message };
  }
  const token = bearerToken(headers);
  if (token === undefined) return { ok: false, reason: 'no X-Hub-Signature-256, X-Gitlab-Token or bearer secret' };
  return safeEqual(token, secret) ? { ok: true } : { ok: false, reason: 'the bearer secret is wrong' };
}

function schemeOf(headers: HeaderMap): SignatureScheme | undefined {
  if (headers['x-hub-signature-256'] !== undefined) return SIGNATURE_SCHEMES.github;
  if (headers['x-gitlab-token'] !== undefined || headers['webhook-signature'] !== undefined)
    return SIGNATURE_SCHEMES.gitlab;
  return undefined;
}

/** The branch a push notification is about (`ref: refs/heads/<branch>` in GitHub and GitLab payloads), if it says. */
export function pushedBranch(body: Buffer): string | undefined {
  try {
    const parsed = JSON.parse(body.toString('utf8')) as { ref?: unknown };
    return typeof parsed.ref === 'string' && parsed.ref.startsWith('refs/heads/')
      ? parsed.ref.slice('refs/heads/'.length)
      : undefined;
  } catch {
    return undefined;
  }
}
