import { bodyHmacScheme, verifyBodyHmac } from '../body-hmac.ts';
import type { BodyHmacOptions } from '../body-hmac.ts';
import { checkTolerance, deliveryIdFrom, fail, success } from '../primitives.ts';
import { providerIssuedSecret } from '../secrets.ts';
import type { SignatureScheme, VerifyInput, VerifyResult } from '../types.ts';

const TOLERANCE_SECONDS = 60;

const options: BodyHmacOptions = {
  id: 'linear',
  displayName: 'Linear',
  signatureHeader: 'linear-signature',
  prefix: '',
  hash: 'sha256',
  encoding: 'hex',
  deliveryIdHeaders: ['linear-delivery'],
  otherHeaders: ['linear-event'],
  secret: providerIssuedSecret(
    "the webhook's signing secret (lin_wh_…)",
    'Linear → Settings → API → Webhooks → the webhook → Signing secret',
  ),
  docsUrl: 'https://linear.app/developers/webhooks#securing-webhooks',
  notes: [
    'Replay protection comes from the signed body field webhookTimestamp (unix milliseconds), which must be within 60 s of our clock when present.',
  ],
};

/** The signed body's `webhookTimestamp`, if the body is a JSON object that has one. */
function bodyTimestamp(rawBody: Buffer): { present: false } | { present: true; value: unknown } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(rawBody.toString('utf8'));
  } catch {
    return { present: false };
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed) || !('webhookTimestamp' in parsed)) {
    return { present: false };
  }
  return { present: true, value: (parsed as { webhookTimestamp: unknown }).webhookTimestamp };
}

function verify(input: VerifyInput): VerifyResult {
  const failure = verifyBodyHmac(input, options);
  if (failure !== undefined) return failure;
  const timestamp = bodyTimestamp(input.rawBody);
  if (timestamp.present) {
    if (typeof timestamp.value !== 'number' || !Number.isFinite(timestamp.value)) {
      return fail('malformed', 'body field webhookTimestamp is not a number of milliseconds');
    }
    const stale = checkTolerance(timestamp.value, input.now, TOLERANCE_SECONDS, 'body field webhookTimestamp');
    if (stale !== undefined) return stale;
  }
  return success(deliveryIdFrom(input.headers, options.deliveryIdHeaders));
}

export const linear: SignatureScheme = {
  ...bodyHmacScheme(options),
  timestamp: {
    source: { bodyField: 'webhookTimestamp' },
    unit: 'milliseconds',
    toleranceSeconds: TOLERANCE_SECONDS,
    required: false,
  },
  verify,
};
