import { providerIssuedSecret } from '../secrets.ts';
import { verifyTimestampedParams } from '../timestamped-params.ts';
import type { TimestampedParamsFormat } from '../timestamped-params.ts';
import type { SignatureScheme } from '../types.ts';

const FORMAT: TimestampedParamsFormat = {
  header: 'paddle-signature',
  separator: ';',
  timestampKey: 'ts',
  signatureKey: 'h1',
  joiner: ':',
  // Paddle's own SDK rejects a signature older than 5 s; every retry is signed afresh.
  toleranceSeconds: 5,
};

export const paddle: SignatureScheme = {
  id: 'paddle',
  displayName: 'Paddle Billing',
  headers: [FORMAT.header],
  signatureHeader: FORMAT.header,
  signatureFormat: 'ts=<unix seconds>;h1=<hex>[;h1=<hex>…]',
  algorithm: 'hmac-sha256',
  signedContent: '{ts}:{body}',
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
    "the notification destination's secret key (pdl_ntfset_…)",
    'Paddle → Developer tools → Notifications → the destination → Secret key',
  ),
  docsUrl: 'https://developer.paddle.com/webhooks/about/signature-verification',
  notes: [
    'Paddle Billing only; Paddle Classic (p_signature, public key) is a different scheme.',
    "The timestamp must be within 5 s of our clock, as in Paddle's SDK: keep the server on NTP.",
    'Every h1 entry is tried (the official SDK keeps only the last one).',
  ],
  verify: (input) => verifyTimestampedParams(input, FORMAT),
};
