import {
  checkTolerance,
  decodeHex,
  fail,
  headerValues,
  hmac,
  matchesAny,
  parseSignatureParams,
  parseUnixSeconds,
  success,
} from './primitives.ts';
import type { VerifyInput, VerifyResult } from './types.ts';

/**
 * The Stripe family: one header of `key=value` items holding a unix timestamp and one or more hex
 * HMAC-SHA256 signatures of `{timestamp}{joiner}{body}` (Stripe `t`/`v1`/`.`, Calendly likewise, Paddle
 * `ts`/`h1`/`:` with `;` between items). Other keys (Stripe's v0) are ignored.
 */
export interface TimestampedParamsFormat {
  header: string;
  separator: ',' | ';';
  timestampKey: string;
  signatureKey: string;
  joiner: string;
  toleranceSeconds: number;
}

export function verifyTimestampedParams(input: VerifyInput, format: TimestampedParamsFormat): VerifyResult {
  const { header, timestampKey, signatureKey } = format;
  const values = headerValues(input.headers, header);
  if (values.length === 0) return fail('missing_signature', `header ${header} is missing`);
  const params = parseSignatureParams(values, format.separator);
  const timestamps = params.get(timestampKey) ?? [];
  if (timestamps.length !== 1)
    return fail('malformed', `header ${header} must carry exactly one ${timestampKey}= timestamp`);
  const timestampText = timestamps[0]!;
  const timestamp = parseUnixSeconds(timestampText);
  if (timestamp === undefined)
    return fail('malformed', `header ${header} has a ${timestampKey}= value that is not unix seconds`);
  const signatures = params.get(signatureKey) ?? [];
  if (signatures.length === 0) return fail('bad_signature', `header ${header} has no ${signatureKey} signature`);
  const candidates = signatures.map(decodeHex).filter((bytes): bytes is Buffer => bytes !== undefined);
  const expected = hmac('sha256', input.secret, `${timestampText}${format.joiner}`, input.rawBody);
  if (!matchesAny(expected, candidates)) {
    return fail('bad_signature', `no ${signatureKey} signature in ${header} matches the body signed with the secret`);
  }
  // Checked after the signature so that "stale" is only ever said of an authentic request.
  return (
    checkTolerance(timestamp * 1000, input.now, format.toleranceSeconds, `${header} ${timestampKey}=`) ??
    success(undefined)
  );
}
