/**
 * Signed session links: `/sessions/{session id}?exp={unix seconds}&sig={HMAC}`. The HMAC-SHA256 covers the
 * session id and the expiry, with a key derived from the instance master key, so a link works for its
 * lifetime only and cannot be made for another session. Run answers carry a fresh link; the page (and the
 * console that replaces it) checks links with `verify`.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { ServiceContext } from '../context.ts';

export type SessionLinkCheck = 'valid' | 'expired' | 'invalid';

export interface SessionLinkOptions {
  /** The public base URL, read at each link (it may be set after start). */
  baseUrl: () => string;
  ttlSeconds: number;
  now?: () => number;
}

export class SessionLinks {
  readonly #key: Buffer;
  readonly #options: SessionLinkOptions;

  constructor(key: Buffer, options: SessionLinkOptions) {
    this.#key = key;
    this.#options = options;
  }

  #signature(sessionId: string, expires: number): string {
    return createHmac('sha256', this.#key).update(`${sessionId}\n${expires}`).digest('base64url');
  }

  #nowSeconds(): number {
    return Math.floor((this.#options.now ?? Date.now)() / 1000);
  }

  /**
   * The query of a link valid for at least the lifetime. The expiry is rounded up to the hour (for lifetimes
   * of an hour or more), so that answers within the hour carry the same link.
   */
  query(sessionId: string): string {
    const step = this.#options.ttlSeconds >= 3600 ? 3600 : 1;
    const expires = Math.ceil((this.#nowSeconds() + this.#options.ttlSeconds) / step) * step;
    return `exp=${expires}&sig=${this.#signature(sessionId, expires)}`;
  }

  urlFor = (sessionId: string): string =>
    `${this.#options.baseUrl()}/sessions/${encodeURIComponent(sessionId)}?${this.query(sessionId)}`;

  verify(sessionId: string, exp: unknown, sig: unknown): SessionLinkCheck {
    if (typeof exp !== 'string' || typeof sig !== 'string' || !/^\d{1,12}$/.test(exp)) return 'invalid';
    const expected = Buffer.from(this.#signature(sessionId, Number(exp)));
    const given = Buffer.from(sig);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return 'invalid';
    return Number(exp) < this.#nowSeconds() ? 'expired' : 'valid';
  }
}

/** The session links of a server: keyed by its master key, with its public URL and configured lifetime. */
export function sessionLinksFor(ctx: Pick<ServiceContext, 'cipher' | 'config'>): SessionLinks {
  return new SessionLinks(ctx.cipher.deriveKey('session-links'), {
    baseUrl: () => ctx.config.publicUrl,
    ttlSeconds: ctx.config.sessionLinkTtlSeconds,
  });
}
