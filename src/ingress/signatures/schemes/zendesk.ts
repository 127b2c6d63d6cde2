import { decodeBase64, deliveryIdFrom, fail, header, hmac, matchesAny, success } from '../primitives.ts';
import { providerIssuedSecret } from '../secrets.ts';
import type { SignatureScheme } from '../types.ts';

const SIGNATURE = 'x-zendesk-webhook-signature';
const TIMESTAMP = 'x-zendesk-webhook-signature-timestamp';
const DELIVERY_ID_HEADERS = ['x-zendesk-webhook-invocation-id'] as const;

export const zendesk: SignatureScheme = {
  id: 'zendesk',
  displayName: 'Zendesk',
  headers: [SIGNATURE, TIMESTAMP, ...DELIVERY_ID_HEADERS, 'x-zendesk-webhook-id', 'x-zendesk-account-id'],
  signatureHeader: SIGNATURE,
  signatureFormat: '<base64>',
  algorithm: 'hmac-sha256',
  signedContent: '{x-zendesk-webhook-signature-timestamp}{body}',
  encoding: 'base64',
  deliveryIdHeaders: DELIVERY_ID_HEADERS,
  multipleSignatures: false,
  secret: providerIssuedSecret(
    "the webhook's signing secret (used as the literal string, not base64-decoded)",
    'Zendesk Admin Center → Apps and integrations → Webhooks → the webhook → Signing secret → Reveal secret',
  ),
  docsUrl: 'https://developer.zendesk.com/documentation/webhooks/verifying/',
  notes: [
    'The ISO-8601 timestamp is signed but Zendesk documents no tolerance, so its age is not checked.',
    "Test sends from a webhook that is not yet created are signed with Zendesk's fixed test secret, not the real one.",
  ],
  verify(input) {
    const value = header(input.headers, SIGNATURE);
    if (value === undefined) return fail('missing_signature', `header ${SIGNATURE} is missing`);
    const timestamp = header(input.headers, TIMESTAMP);
    if (timestamp === undefined) return fail('malformed', `header ${TIMESTAMP} is missing`);
    const given = decodeBase64(value);
    if (given === undefined) return fail('malformed', `header ${SIGNATURE} is not base64`);
    if (!matchesAny(hmac('sha256', input.secret, timestamp, input.rawBody), [given])) {
      return fail('bad_signature', `header ${SIGNATURE} does not match the timestamp and body signed with the secret`);
    }
    return success(deliveryIdFrom(input.headers, DELIVERY_ID_HEADERS));
  },
};
