/**
 * Signature schemes a `signature`-mode webhook may name in `signatureScheme`.
 * The ingress owns the verifiers; this list is the single source for what a definition may declare.
 */
export const KNOWN_SIGNATURE_SCHEMES = [
  'standard_webhooks',
  'stripe',
  'github',
  'sentry',
  'pagerduty',
  'vercel',
  'slack',
  'shopify',
  'linear',
  'gitlab',
  'twilio',
  'intercom',
  'discord',
] as const;

export type SignatureScheme = (typeof KNOWN_SIGNATURE_SCHEMES)[number];

export function isKnownSignatureScheme(value: unknown): value is SignatureScheme {
  return typeof value === 'string' && (KNOWN_SIGNATURE_SCHEMES as readonly string[]).includes(value);
}

/**
 * Headers that carry credentials or signatures. A webhook's `deliveryIdHeader` must not name one:
 * the delivery log records the delivery ID in the clear.
 */
export const CREDENTIAL_HEADERS: ReadonlySet<string> = new Set([
  'authorization',
  'proxy-authorization',
  'cookie',
  'set-cookie',
  'x-api-key',
  'api-key',
  'x-auth-token',
  'x-access-token',
  'webhook-signature',
  'svix-signature',
  'stripe-signature',
  'x-hub-signature',
  'x-hub-signature-256',
  'sentry-hook-signature',
  'x-pagerduty-signature',
  'x-vercel-signature',
  'x-slack-signature',
  'x-shopify-hmac-sha256',
  'linear-signature',
  'x-gitlab-token',
  'x-twilio-signature',
  'x-signature-ed25519',
]);
