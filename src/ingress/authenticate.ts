import { hash, timingSafeEqual } from 'node:crypto';
import type { HeaderMap } from './signatures/index.ts';
import type { WebhookRoute } from './routing.ts';

export interface AuthRequest {
  headers: HeaderMap;
  rawBody: Buffer;
  /** The extra path segment of a `url_token` URL, if the request had one. */
  urlToken: string | undefined;
  /** The full URL as the sender called it (some providers sign it). */
  url: string;
  now: Date;
}

export type AuthOutcome = { ok: true; providerDeliveryId: string | undefined } | { ok: false; reason: string };

/** Constant-time equality of a credential of any length with the route's secret, by their fixed-size digests. */
function matchesRouteSecret(given: string, expected: Buffer): boolean {
  return timingSafeEqual(hash('sha256', given, 'buffer'), expected);
}

export function bearerToken(headers: HeaderMap): string | undefined {
  const value = headers.authorization;
  const header = Array.isArray(value) ? value[0] : value;
  if (typeof header !== 'string') return undefined;
  const match = /^Bearer[ \t]+(.+)$/i.exec(header.trim());
  return match?.[1]?.trim();
}

/** Checks the request's credential by the webhook's mode. The reason is safe to show to the sender. */
export function authenticate(route: WebhookRoute, request: AuthRequest): AuthOutcome {
  const { secret, secretDigest } = route;
  if (secret === null || secretDigest === null)
    return { ok: false, reason: 'the webhook has no secret yet; set one by rotating its secret' };
  switch (route.authMode) {
    case 'token': {
      const token = bearerToken(request.headers);
      if (token === undefined)
        return { ok: false, reason: 'send the webhook secret as "Authorization: Bearer <secret>"' };
      return matchesRouteSecret(token, secretDigest)
        ? { ok: true, providerDeliveryId: undefined }
        : { ok: false, reason: 'the bearer token is wrong' };
    }
    case 'url_token': {
      if (request.urlToken === undefined)
        return { ok: false, reason: 'this webhook takes its token as the last segment of the URL' };
      return matchesRouteSecret(request.urlToken, secretDigest)
        ? { ok: true, providerDeliveryId: undefined }
        : { ok: false, reason: 'the URL token is wrong' };
    }
    case 'signature': {
      if (!route.scheme)
        return { ok: false, reason: `the signature scheme "${route.schemeId ?? ''}" is not supported` };
      const result = route.scheme.verify({
        rawBody: request.rawBody,
        headers: request.headers,
        secret,
        url: request.url,
        now: request.now,
      });
      if (result.ok) return { ok: true, providerDeliveryId: result.deliveryId };
      return { ok: false, reason: result.message };
    }
  }
}
