import { decodeSignature, deliveryIdFrom, fail, header, hmac, matchesAny, success } from './primitives.ts';
import type { Failure } from './primitives.ts';
import type { SecretRule, SignatureScheme, VerifyInput, VerifyResult } from './types.ts';

/**
 * The most common shape: one header holding `<prefix><HMAC of the raw body>`, no timestamp
 * (GitHub, Shopify, Sentry, Vercel, Intercom, Bitbucket, Typeform, Linear).
 */
export interface BodyHmacOptions {
  id: string;
  displayName: string;
  signatureHeader: string;
  /** Text before the signature, e.g. `sha256=`; matched case-insensitively. Empty when the value is bare. */
  prefix: string;
  hash: 'sha256' | 'sha1';
  encoding: 'hex' | 'base64';
  deliveryIdHeaders: readonly string[];
  /** Headers the scheme documents besides the signature and delivery-ID headers. */
  otherHeaders?: readonly string[];
  secret: SecretRule;
  docsUrl: string;
  notes: readonly string[];
}

export function bodyHmacScheme(options: BodyHmacOptions): SignatureScheme {
  const verify = (input: VerifyInput): VerifyResult => {
    const failure = verifyBodyHmac(input, options);
    return failure ?? success(deliveryIdFrom(input.headers, options.deliveryIdHeaders));
  };
  return {
    id: options.id,
    displayName: options.displayName,
    headers: [options.signatureHeader, ...options.deliveryIdHeaders, ...(options.otherHeaders ?? [])],
    signatureHeader: options.signatureHeader,
    signatureFormat: `${options.prefix}<${options.encoding}>`,
    algorithm: options.hash === 'sha256' ? 'hmac-sha256' : 'hmac-sha1',
    signedContent: '{body}',
    encoding: options.encoding,
    deliveryIdHeaders: options.deliveryIdHeaders,
    multipleSignatures: false,
    secret: options.secret,
    docsUrl: options.docsUrl,
    notes: options.notes,
    verify,
  };
}

/** The failure, or undefined when the body's HMAC matches the header. */
export function verifyBodyHmac(input: VerifyInput, options: BodyHmacOptions): Failure | undefined {
  const value = header(input.headers, options.signatureHeader);
  if (value === undefined) return fail('missing_signature', `header ${options.signatureHeader} is missing`);
  const signature = stripPrefix(value, options.prefix);
  if (signature === undefined) {
    return fail('malformed', `header ${options.signatureHeader} does not start with "${options.prefix}"`);
  }
  const given = decodeSignature(signature, options.encoding);
  if (given === undefined) return fail('malformed', `header ${options.signatureHeader} is not ${options.encoding}`);
  const expected = hmac(options.hash, input.secret, input.rawBody);
  if (!matchesAny(expected, [given])) {
    return fail('bad_signature', `header ${options.signatureHeader} does not match the body signed with the secret`);
  }
  return undefined;
}

export function stripPrefix(value: string, prefix: string): string | undefined {
  if (prefix === '') return value;
  return value.slice(0, prefix.length).toLowerCase() === prefix.toLowerCase() ? value.slice(prefix.length) : undefined;
}
