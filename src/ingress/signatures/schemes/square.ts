import { decodeBase64, fail, header, hmac, matchesAny, success } from '../primitives.ts';
import { providerIssuedSecret } from '../secrets.ts';
import type { SignatureScheme } from '../types.ts';

const SIGNATURE = 'x-square-hmacsha256-signature';

export const square: SignatureScheme = {
  id: 'square',
  displayName: 'Square',
  headers: [SIGNATURE],
  signatureHeader: SIGNATURE,
  signatureFormat: '<base64>',
  algorithm: 'hmac-sha256',
  signedContent: '{notification URL}{body}',
  encoding: 'base64',
  deliveryIdHeaders: [],
  multipleSignatures: false,
  secret: providerIssuedSecret(
    "the webhook subscription's Signature key",
    'Square Developer Console → the application → Webhooks → Subscriptions → the subscription → Signature key',
  ),
  docsUrl: 'https://developer.squareup.com/docs/webhooks/step3validate',
  notes: [
    'The notification URL is signed: the URL the ingress sees must be byte-identical to the subscription URL (mind proxies).',
    'The legacy SHA-1 x-square-signature header is not accepted.',
    'No delivery-ID header; event_id is in the body and retries repeat the body, so the body hash deduplicates them.',
  ],
  verify(input) {
    const value = header(input.headers, SIGNATURE);
    if (value === undefined) return fail('missing_signature', `header ${SIGNATURE} is missing`);
    const given = decodeBase64(value);
    if (given === undefined) return fail('malformed', `header ${SIGNATURE} is not base64`);
    if (!matchesAny(hmac('sha256', input.secret, Buffer.from(input.url, 'utf8'), input.rawBody), [given])) {
      return fail('bad_signature', `header ${SIGNATURE} does not match the URL and body signed with the key`);
    }
    return success(undefined);
  },
};
