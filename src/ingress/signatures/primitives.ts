import { createHash, createHmac, createPublicKey, timingSafeEqual, verify as verifySignature } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import type { HeaderMap, VerifyFailureReason, VerifyResult } from './types.ts';

export type Failure = Extract<VerifyResult, { ok: false }>;

export function fail(reason: VerifyFailureReason, message: string): Failure {
  return { ok: false, reason, message };
}

export function success(deliveryId: string | undefined): VerifyResult {
  return deliveryId === undefined ? { ok: true } : { ok: true, deliveryId };
}

/** Constant-time equality; a length difference answers false without comparing (lengths are not secret). */
export function safeEqual(a: Buffer | string, b: Buffer | string): boolean {
  const x = typeof a === 'string' ? Buffer.from(a, 'utf8') : a;
  const y = typeof b === 'string' ? Buffer.from(b, 'utf8') : b;
  if (x.length !== y.length) return false;
  return timingSafeEqual(x, y);
}

/** True when any candidate equals `expected`. Every candidate is compared, so timing does not say which. */
export function matchesAny(expected: Buffer, candidates: readonly Buffer[]): boolean {
  let matched = false;
  for (const candidate of candidates) {
    if (safeEqual(expected, candidate)) matched = true;
  }
  return matched;
}

export function hmac(
  algorithm: 'sha256' | 'sha1',
  key: Buffer | string,
  ...parts: readonly (Buffer | string)[]
): Buffer {
  const mac = createHmac(algorithm, key);
  for (const part of parts) mac.update(part);
  return mac.digest();
}

export function sha256Hex(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

const HEX = /^(?:[0-9a-fA-F]{2})+$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Strict hex decoding (Buffer.from silently drops bad digits). */
export function decodeHex(text: string): Buffer | undefined {
  return HEX.test(text) ? Buffer.from(text, 'hex') : undefined;
}

/** Strict, padded, standard-alphabet base64 decoding (Buffer.from accepts almost anything). */
export function decodeBase64(text: string): Buffer | undefined {
  return text.length > 0 && BASE64.test(text) ? Buffer.from(text, 'base64') : undefined;
}

export function decodeSignature(text: string, encoding: 'hex' | 'base64'): Buffer | undefined {
  return encoding === 'hex' ? decodeHex(text) : decodeBase64(text);
}

/**
 * Every value received for a header. Repeated headers arrive as an array (or, from Node's parser,
 * joined with ", ").
 */
export function headerValues(headers: HeaderMap, name: string): string[] {
  const value = headers[name];
  if (value === undefined) return [];
  return (typeof value === 'string' ? [value] : [...value]).map((v) => v.trim()).filter((v) => v !== '');
}

/** One header's value; a repeated header joins like Node does, which no scalar parser accepts. */
export function header(headers: HeaderMap, name: string): string | undefined {
  const values = headerValues(headers, name);
  return values.length === 0 ? undefined : values.join(', ');
}

/** The first delivery-ID header present, in order of preference. */
export function deliveryIdFrom(headers: HeaderMap, names: readonly string[]): string | undefined {
  for (const name of names) {
    const value = header(headers, name);
    if (value !== undefined) return value;
  }
  return undefined;
}

const UNIX_SECONDS = /^\d{1,12}$/;

export function parseUnixSeconds(text: string): number | undefined {
  return UNIX_SECONDS.test(text) ? Number(text) : undefined;
}

/**
 * The stale-timestamp failure when `timestampMs` is further than `toleranceSeconds` from `now` in either
 * direction (too old is a replay; too new is a forged or badly skewed clock).
 */
export function checkTolerance(
  timestampMs: number,
  now: Date,
  toleranceSeconds: number,
  label: string,
): Failure | undefined {
  const skewSeconds = (now.getTime() - timestampMs) / 1000;
  if (skewSeconds > toleranceSeconds) {
    return fail(
      'stale_timestamp',
      `${label} is ${Math.round(skewSeconds)} s old; at most ${toleranceSeconds} s is accepted`,
    );
  }
  if (-skewSeconds > toleranceSeconds) {
    return fail(
      'stale_timestamp',
      `${label} is ${Math.round(-skewSeconds)} s in the future; at most ${toleranceSeconds} s of clock skew is accepted`,
    );
  }
  return undefined;
}

// An Ed25519 SubjectPublicKeyInfo is this fixed 12-byte DER header followed by the raw 32-byte key.
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

export function ed25519PublicKey(raw: Buffer): KeyObject {
  if (raw.length !== 32) throw new Error(`an Ed25519 public key is 32 bytes, got ${raw.length}`);
  return createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, raw]), format: 'der', type: 'spki' });
}

export function ed25519Verify(key: KeyObject, message: Buffer, signature: Buffer): boolean {
  if (signature.length !== 64) return false;
  try {
    return verifySignature(null, message, key, signature);
  } catch {
    return false;
  }
}

/** `k=v<sep>k=v…` (Stripe, Calendly, Paddle) → every value per key, in order; repeated headers are merged. */
export function parseSignatureParams(values: readonly string[], separator: ',' | ';'): Map<string, string[]> {
  const params = new Map<string, string[]>();
  for (const value of values) {
    for (const item of value.split(separator)) {
      const eq = item.indexOf('=');
      if (eq < 0) continue;
      const key = item.slice(0, eq).trim();
      const list = params.get(key) ?? [];
      list.push(item.slice(eq + 1).trim());
      params.set(key, list);
    }
  }
  return params;
}
