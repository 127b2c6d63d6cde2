import { decodeHex, deliveryIdFrom, fail, headerValues, hmac, matchesAny, success } from '../primitives.ts';
import { providerIssuedSecret } from '../secrets.ts';
import type { SignatureScheme } from '../types.ts';

const HEADER = 'x-pagerduty-signature';
const DELIVERY_ID_HEADERS = ['x-webhook-id'] as const;

export const pagerduty: SignatureScheme = {
  id: 'pagerduty',
  displayName: 'PagerDuty (v3 webhooks)',
  headers: [HEADER, ...DELIVERY_ID_HEADERS, 'x-webhook-subscription'],
  signatureHeader: HEADER,
  signatureFormat: 'v1=<hex>[,v1=<hex>…]',
  algorithm: 'hmac-sha256',
  signedContent: '{body}',
  encoding: 'hex',
  deliveryIdHeaders: DELIVERY_ID_HEADERS,
  multipleSignatures: true,
  secret: providerIssuedSecret(
    "the webhook subscription's secret",
    'PagerDuty → Integrations → Generic Webhooks (v3) → the subscription; the secret is shown once, when it is created',
  ),
  docsUrl: 'https://developer.pagerduty.com/docs/webhooks/webhook-signatures/',
  notes: ['One v1= entry per active secret, comma-separated; any match is accepted and other versions are ignored.'],
  verify(input) {
    const values = headerValues(input.headers, HEADER);
    if (values.length === 0) return fail('missing_signature', `header ${HEADER} is missing`);
    const candidates = values
      .flatMap((value) => value.split(','))
      .map((entry) => entry.trim())
      .filter((entry) => entry.startsWith('v1='))
      .map((entry) => decodeHex(entry.slice(3)))
      .filter((bytes): bytes is Buffer => bytes !== undefined);
    if (candidates.length === 0) return fail('bad_signature', `header ${HEADER} has no v1 signature`);
    if (!matchesAny(hmac('sha256', input.secret, input.rawBody), candidates)) {
      return fail('bad_signature', `no v1 signature in ${HEADER} matches the body signed with the secret`);
    }
    return success(deliveryIdFrom(input.headers, DELIVERY_ID_HEADERS));
  },
};
