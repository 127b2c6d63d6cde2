import {
  decodeBase64,
  deliveryIdFrom,
  fail,
  header,
  hmac,
  matchesAny,
  safeEqual,
  sha256Hex,
  success,
} from '../primitives.ts';
import { providerIssuedSecret } from '../secrets.ts';
import type { SignatureScheme, VerifyInput } from '../types.ts';

const SIGNATURE = 'x-twilio-signature';
const DELIVERY_ID_HEADERS = ['i-twilio-idempotency-token'] as const;

/**
 * The URL with and without the scheme's default port: Twilio signs the URL as configured, and a proxy or
 * the request line may add or drop `:443`. The path and query are kept byte for byte.
 */
function urlVariants(url: string): string[] {
  const match = /^([a-z][a-z0-9+.-]*:\/\/)([^/?#]*)(.*)$/is.exec(url);
  if (!match) return [url];
  const [, scheme = '', authority = '', rest = ''] = match;
  const at = authority.lastIndexOf('@');
  const userInfo = authority.slice(0, at + 1);
  const hostPort = authority.slice(at + 1);
  const colon = hostPort.indexOf(':', hostPort.lastIndexOf(']') + 1);
  const host = colon === -1 ? hostPort : hostPort.slice(0, colon);
  const defaultPort = scheme.toLowerCase() === 'https://' ? ':443' : ':80';
  const withoutPort = scheme + userInfo + host + rest;
  const withPort = colon === -1 ? scheme + userInfo + host + defaultPort + rest : url;
  return [...new Set([url, withoutPort, withPort])];
}

/** Form posts sign the URL followed by each parameter, sorted by name, as name‖value (repeats sorted, once each). */
function formParameterString(rawBody: Buffer): string {
  const grouped = new Map<string, Set<string>>();
  for (const [name, value] of new URLSearchParams(rawBody.toString('utf8'))) {
    const values = grouped.get(name) ?? new Set<string>();
    values.add(value);
    grouped.set(name, values);
  }
  let data = '';
  for (const name of [...grouped.keys()].sort()) {
    for (const value of [...grouped.get(name)!].sort()) data += name + value;
  }
  return data;
}

function bodySha256Param(url: string): string | null {
  try {
    return new URL(url).searchParams.get('bodySHA256');
  } catch {
    return null;
  }
}

function isFormPost(input: VerifyInput): boolean {
  const contentType = header(input.headers, 'content-type') ?? '';
  return contentType.toLowerCase().startsWith('application/x-www-form-urlencoded');
}

export const twilio: SignatureScheme = {
  id: 'twilio',
  displayName: 'Twilio',
  headers: [SIGNATURE, ...DELIVERY_ID_HEADERS, 'content-type'],
  signatureHeader: SIGNATURE,
  signatureFormat: '<base64>',
  algorithm: 'hmac-sha1',
  signedContent:
    'JSON: {full URL, including ?bodySHA256=<hex SHA-256 of body>}; form posts: {full URL}{name}{value}… sorted by name',
  encoding: 'base64',
  deliveryIdHeaders: DELIVERY_ID_HEADERS,
  multipleSignatures: false,
  secret: providerIssuedSecret(
    "the account's Auth Token (the primary one signs webhooks)",
    'Twilio Console → Account → API keys & tokens → Auth Token',
  ),
  docsUrl: 'https://www.twilio.com/docs/usage/security#validating-requests',
  notes: [
    'The full URL as Twilio called it is signed: behind a proxy that rewrites scheme, host or port the ingress must see the public URL (X-Forwarded-Proto/Host).',
    'For JSON bodies the bodySHA256 query parameter is checked against the body as well.',
    'Form-encoded callbacks verify, but the ingress accepts only JSON bodies.',
  ],
  verify(input) {
    const value = header(input.headers, SIGNATURE);
    if (value === undefined) return fail('missing_signature', `header ${SIGNATURE} is missing`);
    const given = decodeBase64(value);
    if (given === undefined) return fail('malformed', `header ${SIGNATURE} is not base64`);
    const bodyHash = bodySha256Param(input.url);
    const params = bodyHash === null && isFormPost(input) ? formParameterString(input.rawBody) : '';
    const candidates = urlVariants(input.url).map((url) =>
      hmac('sha1', input.secret, Buffer.from(url + params, 'utf8')),
    );
    let valid = false;
    for (const expected of candidates) {
      if (matchesAny(expected, [given])) valid = true;
    }
    if (!valid) return fail('bad_signature', `header ${SIGNATURE} does not match the URL signed with the auth token`);
    if (bodyHash !== null && !safeEqual(bodyHash.toLowerCase(), sha256Hex(input.rawBody))) {
      return fail('bad_signature', 'the bodySHA256 query parameter does not match the body');
    }
    return success(deliveryIdFrom(input.headers, DELIVERY_ID_HEADERS));
  },
};
