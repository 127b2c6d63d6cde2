import { SIGNATURE_SCHEMES, SIGNATURE_SCHEME_IDS } from '../ingress/signatures/registry.ts';

/**
 * Signature schemes a `signature`-mode webhook may name in `signatureScheme`: exactly the schemes the
 * ingress can verify (src/ingress/signatures/registry.ts owns the list).
 */
export const KNOWN_SIGNATURE_SCHEMES: readonly string[] = SIGNATURE_SCHEME_IDS;

export function isKnownSignatureScheme(value: unknown): value is string {
  return typeof value === 'string' && KNOWN_SIGNATURE_SCHEMES.includes(value);
}

/**
 * Headers that carry credentials or signatures. A webhook's `deliveryIdHeader` must not name one:
 * the delivery log records the delivery ID in the clear.
 */
export const CREDENTIAL_HEADERS: ReadonlySet<string> = new Set([
  ...Object.values(SIGNATURE_SCHEMES).map((scheme) => scheme.signatureHeader.toLowerCase()),
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
