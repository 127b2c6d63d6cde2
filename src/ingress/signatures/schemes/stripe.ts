import { providerIssuedSecret } from '../secrets.ts';
import { verifyTimestampedParams } from '../timestamped-params.ts';
import type { TimestampedParamsFormat } from '../timestamped-params.ts';
import type { SignatureScheme } from '../types.ts';

const FORMAT: TimestampedParamsFormat = {
  header: 'stripe-signature',
  separator: ',',
  timestampKey: 't',
  signatureKey: 'v1',
  joiner: '.',
  toleranceSeconds: 300,
};

export const stripe: SignatureScheme = {
  id: 'stripe',
  displayName: 'Stripe',
  headers: [FORMAT.header],
  signatureHeader: FORMAT.header,
  signatureFormat: 't=<unix seconds>,v1=<hex>[,v1=<hex>…][,v0=<hex>]',
  algorithm: 'hmac-sha256',
  signedContent: '{t}.{body}',
  encoding: 'hex',
  timestamp: {
    source: { header: FORMAT.header },
    unit: 'seconds',
    toleranceSeconds: FORMAT.toleranceSeconds,
    required: true,
  },
  deliveryIdHeaders: [],
  multipleSignatures: true,
  secret: providerIssuedSecret(
    "the endpoint's signing secret, whsec_… (used whole, as UTF-8: not base64-decoded)",
    'Stripe Dashboard → Developers → Webhooks → the endpoint → Signing secret',
    (secret) => (secret.startsWith('whsec_') ? undefined : 'a Stripe signing secret starts with whsec_'),
  ),
  docsUrl: 'https://docs.stripe.com/webhooks#verify-events',
  notes: [
    'Only v1 signatures count; the v0 entry of test-mode events is ignored, so a v0-only header is rejected.',
    'Several v1 entries appear while a secret is being rolled; any match is accepted.',
    'Timestamps more than 300 s old (or ahead of our clock) are rejected.',
    'No delivery-ID header: retries carry the same event body, so the body hash deduplicates them.',
  ],
  verify: (input) => verifyTimestampedParams(input, FORMAT),
};
