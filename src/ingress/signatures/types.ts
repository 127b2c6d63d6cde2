/**
 * A provider signature scheme, described as data plus one `verify` function. The data fields are what
 * the docs, the dashboard and the validator show; `verify` is the only part the ingress calls per request.
 */

/** Header names are lower-case; Node and Fastify deliver them that way. */
export type HeaderMap = Readonly<Record<string, string | readonly string[] | undefined>>;

export interface VerifyInput {
  /** The request body exactly as received: never re-serialised JSON. */
  rawBody: Buffer;
  headers: HeaderMap;
  /** The webhook's signing secret (or, for Ed25519 schemes, the provider's public key). */
  secret: string;
  /** The full request URL as the sender called it (scheme, host, path, query). Twilio and Square sign it. */
  url: string;
  now: Date;
}

export type VerifyFailureReason =
  | 'missing_signature'
  | 'bad_signature'
  | 'missing_timestamp'
  | 'stale_timestamp'
  | 'malformed';

export type VerifyResult =
  | { ok: true; deliveryId?: string }
  | { ok: false; reason: VerifyFailureReason; message: string };

export type SignatureAlgorithm = 'hmac-sha256' | 'hmac-sha1' | 'ed25519' | 'token';

export type SignatureEncoding = 'hex' | 'base64' | 'plain';

export interface TimestampRule {
  /** Where the signed timestamp lives: a header (lower-case) or a top-level body field. */
  source: { header: string } | { bodyField: string };
  unit: 'seconds' | 'milliseconds' | 'iso8601';
  /** Allowed difference from our clock, in seconds, in both directions. */
  toleranceSeconds: number;
  /** False when the timestamp is optional (checked only when present). */
  required: boolean;
}

/**
 * How the configured secret becomes key material:
 * - `utf8`: the whole string, as UTF-8 bytes, is the HMAC key (Stripe keeps its `whsec_` prefix in the key);
 * - `whsec_base64`: strip an optional `whsec_` prefix and base64-decode (Standard Webhooks, Svix);
 *   a `whpk_` value is instead an Ed25519 public key for v1a signatures;
 * - `ed25519_public_hex`: a 32-byte Ed25519 public key written as 64 hex digits (Discord);
 * - `plain_token`: compared as-is with a header value (GitLab's secret token).
 */
export type SecretInterpretation = 'utf8' | 'whsec_base64' | 'ed25519_public_hex' | 'plain_token';

export interface SecretRule {
  interpretation: SecretInterpretation;
  /** Human description of what to paste, e.g. "the endpoint's signing secret (whsec_…)". */
  description: string;
  /** Where the provider shows the secret; or, when the service generates it, where to paste it. */
  obtain: string;
  /** Present when the service may generate the secret (the sender lets the user choose or accepts ours). */
  generate?: () => string;
  /** A problem with a configured secret's format (checked at apply time), or undefined when it is usable. */
  check(secret: string): string | undefined;
}

export interface SignatureScheme {
  /** The `signatureScheme` value in webhook definition files. */
  id: string;
  displayName: string;
  /** Every header the scheme reads (lower-case), signature first. */
  headers: readonly string[];
  /** The header carrying the signature (or token). */
  signatureHeader: string;
  /** How the signature header value is shaped, e.g. "t=<unix>,v1=<hex>[,v1=<hex>…]". */
  signatureFormat: string;
  algorithm: SignatureAlgorithm;
  /** What bytes are signed, e.g. "{webhook-id}.{webhook-timestamp}.{body}". */
  signedContent: string;
  encoding: SignatureEncoding;
  timestamp?: TimestampRule;
  /** The provider's own delivery-ID headers, in order of preference (lower-case). */
  deliveryIdHeaders: readonly string[];
  /** Whether one request may carry several signatures (key rotation); any valid one is accepted. */
  multipleSignatures: boolean;
  secret: SecretRule;
  /** Provider documentation for setting up the sender. */
  docsUrl: string;
  /** Things that bite: sender configuration, proxies, handshakes the ingress does not answer. */
  notes: readonly string[];
  verify(input: VerifyInput): VerifyResult;
}
