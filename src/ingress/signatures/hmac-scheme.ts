import {
  checkTolerance,
  decodeSignature,
  deliveryIdFrom,
  fail,
  header,
  headerValues,
  hmac,
  matchesAny,
  parseSignatureParams,
  parseUnixSeconds,
  success,
} from './primitives.ts';
import type { Failure } from './primitives.ts';
import type { SecretRule, SignatureScheme, TimestampRule, VerifyInput, VerifyResult } from './types.ts';

/**
 * A part of the signed bytes: literal text, a header's value (the request is malformed without it), the
 * signed timestamp as received, the URL as the sender called it, or the raw body.
 */
export type SignedPart = { text: string } | { header: string } | 'timestamp' | 'url' | 'body';

/**
 * Where the signature is: one header's value after a prefix (matched case-insensitively, empty when bare), or
 * every value of one key in a header of `key=value` items (several while a secret rolls; any one may match).
 */
export type SignatureSource =
  | { header: string; prefix: string }
  | { header: string; separator: ',' | ';'; key: string };

/**
 * The signed timestamp, checked against our clock: in a header, under a key of the signature header's items,
 * or in a top-level field of a JSON body (checked after the signature, as the body is what is signed).
 */
export interface TimestampSource {
  from: { header: string } | { key: string } | { bodyField: string };
  unit: 'seconds' | 'milliseconds' | 'iso8601';
  toleranceSeconds: number;
  /**
   * A body field is optional unless the provider documents it on every delivery (Linear): without it a
   * signed body could be replayed forever under a new delivery id.
   */
  bodyFieldRequired?: boolean;
}

/** A scheme that is an HMAC of some parts of the request, described as data; `hmacScheme` makes it a verifier. */
export interface HmacSchemeRecord {
  id: string;
  displayName: string;
  hash: 'sha256' | 'sha1';
  encoding: 'hex' | 'base64';
  signature: SignatureSource;
  signed: readonly SignedPart[];
  timestamp?: TimestampSource;
  /** The provider's own delivery-ID headers, in order of preference (lower-case). */
  deliveryIdHeaders: readonly string[];
  /** Headers the scheme documents besides those above. */
  otherHeaders?: readonly string[];
  /** How the signature header looks, when more than the derived `<prefix><encoding>` or `k=…` form. */
  signatureFormat?: string;
  secret: SecretRule;
  docsUrl: string;
  notes: readonly string[];
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$/i;
const UNIT_TEXT = { seconds: 'unix seconds', milliseconds: 'unix milliseconds', iso8601: 'an RFC 3339 time' };

/** The scheme the record describes: its documented fields, and the one verifier every such record shares. */
export function hmacScheme(record: HmacSchemeRecord): SignatureScheme {
  const { signature, timestamp } = record;
  const signedHeaders = record.signed.flatMap((part) =>
    typeof part === 'object' && 'header' in part ? [part.header] : [],
  );
  const timestampHeader = timestamp && 'header' in timestamp.from ? [timestamp.from.header] : [];
  const headers = [
    signature.header,
    ...timestampHeader,
    ...signedHeaders,
    ...record.deliveryIdHeaders,
    ...(record.otherHeaders ?? []),
  ];
  return {
    id: record.id,
    displayName: record.displayName,
    headers: [...new Set(headers)],
    signatureHeader: signature.header,
    signatureFormat: record.signatureFormat ?? signatureFormatOf(record),
    algorithm: record.hash === 'sha256' ? 'hmac-sha256' : 'hmac-sha1',
    signedContent: record.signed.map((part) => signedContentOf(part, timestamp)).join(''),
    encoding: record.encoding,
    ...(timestamp ? { timestamp: timestampRuleOf(timestamp, signature.header) } : {}),
    deliveryIdHeaders: record.deliveryIdHeaders,
    multipleSignatures: 'key' in signature,
    secret: record.secret,
    docsUrl: record.docsUrl,
    notes: record.notes,
    verify: (input) => verifyHmac(record, input),
  };
}

function verifyHmac(record: HmacSchemeRecord, input: VerifyInput): VerifyResult {
  const { signature, timestamp } = record;
  const values = headerValues(input.headers, signature.header);
  if (values.length === 0) return fail('missing_signature', `header ${signature.header} is missing`);
  const params = 'key' in signature ? parseSignatureParams(values, signature.separator) : undefined;

  let signedTime: { text: string; ms: number } | undefined;
  if (timestamp && !('bodyField' in timestamp.from)) {
    const read = readSignedTimestamp(input, timestamp, params, signature.header);
    if ('reason' in read) return read;
    signedTime = read;
  }
  const parts: (Buffer | string)[] = [];
  for (const part of record.signed) {
    if (part === 'body') parts.push(input.rawBody);
    else if (part === 'url') parts.push(Buffer.from(input.url, 'utf8'));
    else if (part === 'timestamp') parts.push(signedTime?.text ?? '');
    else if ('text' in part) parts.push(part.text);
    else {
      const value = header(input.headers, part.header);
      if (value === undefined) return fail('malformed', `header ${part.header} is missing`);
      parts.push(value);
    }
  }

  const candidates = signaturesOf(record, values, params);
  if ('reason' in candidates) return candidates;
  if (!matchesAny(hmac(record.hash, input.secret, ...parts), candidates)) {
    return fail(
      'bad_signature',
      `${describeSignature(signature)} does not match the ${signedNames(record)} signed with the secret`,
    );
  }
  // Checked after the signature so that "stale" is only ever said of an authentic request.
  const stale = signedTime
    ? checkTolerance(
        signedTime.ms,
        input.now,
        timestamp!.toleranceSeconds,
        timestampLabel(timestamp!, signature.header),
      )
    : timestamp
      ? checkBodyTimestamp(input.rawBody, input.now, timestamp)
      : undefined;
  return stale ?? success(deliveryIdFrom(input.headers, record.deliveryIdHeaders));
}

function readSignedTimestamp(
  input: VerifyInput,
  timestamp: TimestampSource,
  params: Map<string, string[]> | undefined,
  signatureHeader: string,
): Failure | { text: string; ms: number } {
  const label = timestampLabel(timestamp, signatureHeader);
  let text: string | undefined;
  if ('key' in timestamp.from) {
    const found = params?.get(timestamp.from.key) ?? [];
    if (found.length !== 1) return fail('malformed', `${label} must appear exactly once`);
    text = found[0];
  } else if ('header' in timestamp.from) {
    text = header(input.headers, timestamp.from.header);
  }
  if (text === undefined) return fail('malformed', `${label} is missing`);
  const ms = timestampMs(text, timestamp.unit);
  if (ms === undefined) return fail('malformed', `${label} is not ${UNIT_TEXT[timestamp.unit]}`);
  return { text, ms };
}

function timestampMs(text: string, unit: TimestampSource['unit']): number | undefined {
  if (unit === 'iso8601') {
    const ms = RFC3339.test(text) ? Date.parse(text) : Number.NaN;
    return Number.isNaN(ms) ? undefined : ms;
  }
  if (unit === 'milliseconds') return /^\d{1,15}$/.test(text) ? Number(text) : undefined;
  const seconds = parseUnixSeconds(text);
  return seconds === undefined ? undefined : seconds * 1000;
}

/** A body-field timestamp: a number in the record's unit when present; missing is refused when required. */
function checkBodyTimestamp(rawBody: Buffer, now: Date, timestamp: TimestampSource): Failure | undefined {
  if (!('bodyField' in timestamp.from)) return undefined;
  const field = timestamp.from.bodyField;
  const missing = timestamp.bodyFieldRequired
    ? fail('missing_timestamp', `body field ${field} is missing: every delivery must carry its signed time`)
    : undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(rawBody.toString('utf8'));
  } catch {
    return missing;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed) || !(field in parsed)) return missing;
  const value = (parsed as Record<string, unknown>)[field];
  if (typeof value !== 'number' || !Number.isFinite(value))
    return fail('malformed', `body field ${field} is not a number of ${timestamp.unit}`);
  const ms = timestamp.unit === 'seconds' ? value * 1000 : value;
  return checkTolerance(ms, now, timestamp.toleranceSeconds, `body field ${field}`);
}

function signaturesOf(
  record: HmacSchemeRecord,
  values: readonly string[],
  params: Map<string, string[]> | undefined,
): Failure | Buffer[] {
  const { signature, encoding } = record;
  if ('key' in signature) {
    const decoded = (params?.get(signature.key) ?? [])
      .map((text) => decodeSignature(text, encoding))
      .filter((bytes): bytes is Buffer => bytes !== undefined);
    if (decoded.length === 0)
      return fail('bad_signature', `header ${signature.header} has no ${signature.key} signature`);
    return decoded;
  }
  const value = values.join(', ');
  const { prefix } = signature;
  if (value.slice(0, prefix.length).toLowerCase() !== prefix.toLowerCase())
    return fail('malformed', `header ${signature.header} does not start with "${prefix}"`);
  const given = decodeSignature(value.slice(prefix.length), encoding);
  if (given === undefined) return fail('malformed', `header ${signature.header} is not ${encoding}`);
  return [given];
}

function describeSignature(signature: SignatureSource): string {
  return 'key' in signature ? `no ${signature.key} signature in ${signature.header}` : `header ${signature.header}`;
}

function signedNames(record: HmacSchemeRecord): string {
  const names = record.signed.flatMap((part) => {
    if (part === 'body') return ['body'];
    if (part === 'url') return ['URL'];
    if (part === 'timestamp') return ['timestamp'];
    return 'header' in part ? [part.header] : [];
  });
  return names.length > 1 ? `${names.slice(0, -1).join(', ')} and ${names.at(-1)}` : (names[0] ?? 'body');
}

function timestampLabel(timestamp: TimestampSource, signatureHeader: string): string {
  const { from } = timestamp;
  if ('key' in from) return `${signatureHeader} ${from.key}=`;
  if ('header' in from) return `header ${from.header}`;
  return `body field ${from.bodyField}`;
}

function timestampRuleOf(timestamp: TimestampSource, signatureHeader: string): TimestampRule {
  const { from } = timestamp;
  return {
    source:
      'bodyField' in from
        ? { bodyField: from.bodyField }
        : { header: 'header' in from ? from.header : signatureHeader },
    unit: timestamp.unit,
    toleranceSeconds: timestamp.toleranceSeconds,
    required: !('bodyField' in from) || timestamp.bodyFieldRequired === true,
  };
}

function signatureFormatOf(record: HmacSchemeRecord): string {
  const { signature, encoding, timestamp } = record;
  if (!('key' in signature)) return `${signature.prefix}<${encoding}>`;
  const item = `${signature.key}=<${encoding}>`;
  const sep = signature.separator;
  const time = timestamp && 'key' in timestamp.from ? `${timestamp.from.key}=<${UNIT_TEXT[timestamp.unit]}>${sep}` : '';
  return `${time}${item}[${sep}${item}…]`;
}

function signedContentOf(part: SignedPart, timestamp: TimestampSource | undefined): string {
  if (part === 'body') return '{body}';
  if (part === 'url') return '{notification URL}';
  if (part === 'timestamp') {
    const from = timestamp?.from;
    return `{${from && 'key' in from ? from.key : from && 'header' in from ? from.header : 'timestamp'}}`;
  }
  return 'text' in part ? part.text : `{${part.header}}`;
}
