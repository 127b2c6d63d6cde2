import { deliveryIdFrom, fail, header, safeEqual, success } from '../primitives.ts';
import { userChosenSecret } from '../secrets.ts';
import type { SignatureScheme } from '../types.ts';
import { STANDARD_WEBHOOKS_TOLERANCE_SECONDS, verifyStandardWebhooksHeaders } from './standard-webhooks.ts';

const TOKEN = 'x-gitlab-token';
const DELIVERY_ID_HEADERS = ['idempotency-key', 'x-gitlab-event-uuid', 'webhook-id'] as const;

export const gitlab: SignatureScheme = {
  id: 'gitlab',
  displayName: 'GitLab',
  headers: [
    TOKEN,
    'webhook-signature',
    'webhook-id',
    'webhook-timestamp',
    ...DELIVERY_ID_HEADERS.slice(0, 2),
    'x-gitlab-event',
    'x-gitlab-instance',
  ],
  signatureHeader: TOKEN,
  signatureFormat: 'X-Gitlab-Token: <secret token>; or, with a signing token, webhook-signature: v1,<base64>',
  algorithm: 'token',
  signedContent:
    'secret token: nothing is signed (the token itself is sent); signing token: {webhook-id}.{webhook-timestamp}.{body}',
  encoding: 'plain',
  timestamp: {
    source: { header: 'webhook-timestamp' },
    unit: 'seconds',
    toleranceSeconds: STANDARD_WEBHOOKS_TOLERANCE_SECONDS,
    required: false,
  },
  deliveryIdHeaders: DELIVERY_ID_HEADERS,
  multipleSignatures: true,
  secret: userChosenSecret(
    "the webhook's Secret token (any string); or its Signing token (whsec_…) when GitLab signs requests",
    'Project or group → Settings → Webhooks → the webhook → Secret token (paste the generated value) or Signing token',
    'plain_token',
  ),
  docsUrl: 'https://docs.gitlab.com/user/project/integrations/webhooks/',
  notes: [
    'A secret token is compared in constant time with X-Gitlab-Token; it gives no replay protection.',
    'When GitLab also sends Standard Webhooks headers (signing token), the request is accepted if either the signature verifies with the configured secret or X-Gitlab-Token equals it.',
  ],
  verify(input) {
    const token = header(input.headers, TOKEN);
    const signed = header(input.headers, 'webhook-signature') !== undefined;
    if (token === undefined && !signed) {
      return fail('missing_signature', `neither ${TOKEN} nor webhook-signature is present`);
    }
    const deliveryId = deliveryIdFrom(input.headers, DELIVERY_ID_HEADERS);
    if (token !== undefined && safeEqual(token, input.secret)) return success(deliveryId);
    if (signed) {
      const result = verifyStandardWebhooksHeaders(input, 'webhook-');
      if (result.ok) return success(deliveryId ?? result.deliveryId);
      if (token === undefined || result.reason === 'stale_timestamp') return result;
      return fail('bad_signature', `${TOKEN} does not match the secret and ${result.message}`);
    }
    return fail('bad_signature', `${TOKEN} does not match the secret`);
  },
};
