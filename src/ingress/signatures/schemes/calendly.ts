import { userChosenSecret } from '../secrets.ts';
import { verifyTimestampedParams } from '../timestamped-params.ts';
import type { TimestampedParamsFormat } from '../timestamped-params.ts';
import type { SignatureScheme } from '../types.ts';

const FORMAT: TimestampedParamsFormat = {
  header: 'calendly-webhook-signature',
  separator: ',',
  timestampKey: 't',
  signatureKey: 'v1',
  joiner: '.',
  // Calendly publishes no number; this is the tolerance commonly used for its t= header.
  toleranceSeconds: 180,
};

export const calendly: SignatureScheme = {
  id: 'calendly',
  displayName: 'Calendly',
  headers: [FORMAT.header],
  signatureHeader: FORMAT.header,
  signatureFormat: 't=<unix seconds>,v1=<hex>',
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
  secret: userChosenSecret(
    "the webhook subscription's signing_key (chosen by you for personal-token subscriptions, issued for OAuth apps)",
    'the signing_key field of POST /webhook_subscriptions (paste the generated value), or the OAuth app settings',
  ),
  docsUrl: 'https://developer.calendly.com/api-docs/overview/webhooks/webhook-signatures',
  notes: ['Calendly documents no tolerance; 3 minutes either way is applied.'],
  verify: (input) => verifyTimestampedParams(input, FORMAT),
};
