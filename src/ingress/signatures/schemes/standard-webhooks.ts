import { randomBytes } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import {
  checkTolerance,
  decodeBase64,
  ed25519PublicKey,
  ed25519Verify,
  fail,
  header,
  headerValues,
  hmac,
  matchesAny,
  parseUnixSeconds,
  success,
} from '../primitives.ts';
import { basicSecretProblem } from '../secrets.ts';
import type { SignatureScheme, VerifyInput, VerifyResult } from '../types.ts';

export const STANDARD_WEBHOOKS_TOLERANCE_SECONDS = 5 * 60;
const MIN_KEY_BYTES = 24;
const MAX_KEY_BYTES = 64;
// Rotation needs two or three; the cap bounds the Ed25519 work one request can ask for.
const MAX_SIGNATURES = 16;

type Key = { kind: 'hmac'; bytes: Buffer } | { kind: 'ed25519'; publicKey: KeyObject };

/**
 * `whsec_<base64>` (or bare base64) is an HMAC key; `whpk_<base64>` is a pinned Ed25519 public key for
 * v1a signatures. A string answer is what is wrong with the secret.
 */
export function parseStandardWebhooksSecret(secret: string): Key | string {
  if (secret.startsWith('whsk_')) {
    return "a whsk_ value is the sender's private signing key; configure its whpk_ public key instead";
  }
  if (secret.startsWith('whpk_')) {
    const raw = decodeBase64(secret.slice('whpk_'.length));
    if (raw === undefined || raw.length !== 32) return 'a whpk_ public key must be the base64 of 32 bytes';
    return { kind: 'ed25519', publicKey: ed25519PublicKey(raw) };
  }
  const encoded = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
  const bytes = decodeBase64(encoded);
  if (bytes === undefined) return 'the secret must be whsec_ followed by base64';
  if (bytes.length > MAX_KEY_BYTES)
    return `the secret decodes to ${bytes.length} bytes; at most ${MAX_KEY_BYTES} are allowed`;
  return { kind: 'hmac', bytes };
}

function checkSecret(secret: string): string | undefined {
  const basic = basicSecretProblem(secret);
  if (basic !== undefined) return basic;
  const key = parseStandardWebhooksSecret(secret);
  if (typeof key === 'string') return key;
  if (key.kind === 'hmac' && key.bytes.length < MIN_KEY_BYTES) {
    return `the secret decodes to ${key.bytes.length} bytes; Standard Webhooks requires at least ${MIN_KEY_BYTES}`;
  }
  return undefined;
}

/** A new `whsec_` secret: 32 random bytes, base64 (the spec asks for 24 to 64). */
export function generateStandardWebhooksSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** `v1,<b64> v1a,<b64> …`, possibly spread over repeated headers (which Node joins with ", "). */
function signatureEntries(values: readonly string[]): Array<{ version: string; signature: string }> {
  const entries: Array<{ version: string; signature: string }> = [];
  for (const value of values) {
    for (const token of value.split(/\s+/)) {
      const entry = token.replace(/,$/, '');
      const comma = entry.indexOf(',');
      if (comma <= 0) continue;
      entries.push({ version: entry.slice(0, comma), signature: entry.slice(comma + 1) });
    }
  }
  return entries;
}

/**
 * Verifies the `{prefix}id`, `{prefix}timestamp`, `{prefix}signature` triple. Exported for GitLab's
 * signing tokens, which follow Standard Webhooks.
 */
export function verifyStandardWebhooksHeaders(input: VerifyInput, prefix: 'webhook-' | 'svix-'): VerifyResult {
  const signatureHeader = `${prefix}signature`;
  const signatureValues = headerValues(input.headers, signatureHeader);
  if (signatureValues.length === 0) return fail('missing_signature', `header ${signatureHeader} is missing`);
  const id = header(input.headers, `${prefix}id`);
  if (id === undefined) return fail('malformed', `header ${prefix}id is missing`);
  const timestampText = header(input.headers, `${prefix}timestamp`);
  if (timestampText === undefined) return fail('malformed', `header ${prefix}timestamp is missing`);
  const timestamp = parseUnixSeconds(timestampText);
  if (timestamp === undefined) return fail('malformed', `header ${prefix}timestamp is not a unix time in seconds`);

  const key = parseStandardWebhooksSecret(input.secret);
  if (typeof key === 'string') return fail('malformed', `the configured secret is unusable: ${key}`);

  const wanted = key.kind === 'hmac' ? 'v1' : 'v1a';
  const candidates = signatureEntries(signatureValues)
    .filter((entry) => entry.version === wanted)
    .map((entry) => decodeBase64(entry.signature))
    .filter((bytes): bytes is Buffer => bytes !== undefined);
  if (candidates.length === 0) {
    return fail('bad_signature', `header ${signatureHeader} has no ${wanted} signature`);
  }
  if (candidates.length > MAX_SIGNATURES) {
    return fail(
      'malformed',
      `header ${signatureHeader} has ${candidates.length} ${wanted} signatures; at most ${MAX_SIGNATURES} are checked`,
    );
  }

  const signedContent = Buffer.concat([Buffer.from(`${id}.${timestampText}.`, 'utf8'), input.rawBody]);
  let valid: boolean;
  if (key.kind === 'hmac') {
    valid = matchesAny(hmac('sha256', key.bytes, signedContent), candidates);
  } else {
    valid = false;
    for (const candidate of candidates) {
      if (ed25519Verify(key.publicKey, signedContent, candidate)) valid = true;
    }
  }
  if (!valid) return fail('bad_signature', `no ${wanted} signature in ${signatureHeader} matches the secret`);

  // Checked after the signature so that "stale" is only ever said of an authentic request.
  const stale = checkTolerance(timestamp * 1000, input.now, STANDARD_WEBHOOKS_TOLERANCE_SECONDS, `${prefix}timestamp`);
  return stale ?? success(id);
}

export const standardWebhooks: SignatureScheme = {
  id: 'standard_webhooks',
  displayName: 'Standard Webhooks (and Svix, Clerk, Resend)',
  headers: ['webhook-signature', 'webhook-id', 'webhook-timestamp', 'svix-signature', 'svix-id', 'svix-timestamp'],
  signatureHeader: 'webhook-signature',
  signatureFormat: 'space-separated v1,<base64> (HMAC) or v1a,<base64> (Ed25519) entries',
  algorithm: 'hmac-sha256',
  signedContent: '{webhook-id}.{webhook-timestamp}.{body}',
  encoding: 'base64',
  timestamp: {
    source: { header: 'webhook-timestamp' },
    unit: 'seconds',
    toleranceSeconds: STANDARD_WEBHOOKS_TOLERANCE_SECONDS,
    required: true,
  },
  deliveryIdHeaders: ['webhook-id', 'svix-id'],
  multipleSignatures: true,
  secret: {
    interpretation: 'whsec_base64',
    description:
      'whsec_ followed by the base64 of 24–64 random bytes; or whpk_ + base64 Ed25519 public key for v1a senders',
    obtain:
      "leave the secret blank and the service generates a whsec_ secret to give the sender; or paste the sender's",
    generate: generateStandardWebhooksSecret,
    check: checkSecret,
  },
  docsUrl: 'https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md',
  notes: [
    'Svix-branded headers (svix-id, svix-timestamp, svix-signature) are accepted as well; a request uses one set, not a mix.',
    'Only v1 (HMAC-SHA256) entries are checked with a whsec_ secret; only v1a (Ed25519) entries with a whpk_ key.',
    'Timestamps more than 5 minutes old or in the future are rejected.',
  ],
  verify(input) {
    const prefix =
      header(input.headers, 'webhook-signature') === undefined && header(input.headers, 'svix-signature') !== undefined
        ? 'svix-'
        : 'webhook-';
    return verifyStandardWebhooksHeaders(input, prefix);
  },
};
