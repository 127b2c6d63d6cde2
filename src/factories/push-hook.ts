import { createHmac, timingSafeEqual } from 'node:crypto';

function same(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * Does a push notification carry the factory's push secret? Accepted forms: GitHub's
 * `X-Hub-Signature-256: sha256=<HMAC-SHA256 of the body>`, GitLab's `X-Gitlab-Token: <secret>`, or
 * `Authorization: Bearer <secret>` (CI scripts, other hosts). Comparisons are constant-time.
 */
export function verifyPushNotification(
  headers: Record<string, string | string[] | undefined>,
  body: Buffer,
  secret: string,
): boolean {
  const header = (name: string): string | undefined => {
    const v = headers[name];
    return Array.isArray(v) ? v[0] : v;
  };
  const github = header('x-hub-signature-256');
  if (github !== undefined) {
    const expected = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
    return same(github.trim().toLowerCase(), expected);
  }
  const gitlab = header('x-gitlab-token');
  if (gitlab !== undefined) return same(gitlab, secret);
  const bearer = /^Bearer\s+(.+)$/i.exec(header('authorization') ?? '')?.[1]?.trim();
  return bearer !== undefined && same(bearer, secret);
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
