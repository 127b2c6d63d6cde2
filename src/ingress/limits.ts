/** The ingress limits, in one place: the docs (docs/ingress.md) quote these numbers. */

/** 256 KB, counted on the raw body as received: 262,144 bytes. One byte more answers 413. */
export const WEBHOOK_BODY_LIMIT = 256 * 1024;

export interface IngressLimits {
  /** Deliveries per sender (webhook, IP) per window; the spec's 60 per minute. */
  senderPoints: number;
  senderWindowSeconds: number;
  /** Failed authentications per (webhook, IP) per window before every request answers 429. */
  failedAuthPoints: number;
  failedAuthWindowSeconds: number;
  /**
   * Provider events (GitHub, Slack, Linear) per connection per window, counted once a delivery's signature
   * checks out: a provider posts a team's whole traffic from a few addresses, so a per-IP budget would refuse it.
   */
  providerEventPoints: number;
  providerEventWindowSeconds: number;
}

export const DEFAULT_INGRESS_LIMITS: IngressLimits = {
  senderPoints: 60,
  senderWindowSeconds: 60,
  failedAuthPoints: 20,
  failedAuthWindowSeconds: 600,
  providerEventPoints: 6_000,
  providerEventWindowSeconds: 60,
};

/** Group commit: deliveries that arrive together are written in one transaction of at most this many. */
export const GROUP_COMMIT_MAX_BATCH = 200;

/** Delivery log retention: a delivery is purged only when it is beyond both of these for its webhook. */
export const RETENTION_MIN_DELIVERIES = 50;
export const RETENTION_MIN_AGE_MS = 7 * 24 * 60 * 60 * 1000;
