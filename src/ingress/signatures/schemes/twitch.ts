import { stripPrefix } from '../body-hmac.ts';
import { checkTolerance, decodeHex, fail, header, hmac, matchesAny, success } from '../primitives.ts';
import { userChosenSecret } from '../secrets.ts';
import type { SignatureScheme } from '../types.ts';

const SIGNATURE = 'twitch-eventsub-message-signature';
const ID = 'twitch-eventsub-message-id';
const TIMESTAMP = 'twitch-eventsub-message-timestamp';
const TOLERANCE_SECONDS = 10 * 60;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$/i;

export const twitch: SignatureScheme = {
  id: 'twitch',
  displayName: 'Twitch EventSub',
  headers: [SIGNATURE, ID, TIMESTAMP, 'twitch-eventsub-message-type', 'twitch-eventsub-message-retry'],
  signatureHeader: SIGNATURE,
  signatureFormat: 'sha256=<hex>',
  algorithm: 'hmac-sha256',
  signedContent: '{twitch-eventsub-message-id}{twitch-eventsub-message-timestamp}{body}',
  encoding: 'hex',
  timestamp: { source: { header: TIMESTAMP }, unit: 'iso8601', toleranceSeconds: TOLERANCE_SECONDS, required: true },
  deliveryIdHeaders: [ID],
  multipleSignatures: false,
  secret: userChosenSecret(
    'the secret given when creating the subscription (10–100 ASCII characters)',
    'the transport.secret field of the EventSub subscription request (paste the generated value)',
  ),
  docsUrl: 'https://dev.twitch.tv/docs/eventsub/handling-webhook-events/#verifying-the-event-message',
  notes: [
    'Messages older than 10 minutes (or that far ahead) are rejected.',
    'The webhook_callback_verification message expects its challenge echoed back in plain text; the ingress answers 202, so subscription verification needs a responder in front.',
  ],
  verify(input) {
    const value = header(input.headers, SIGNATURE);
    if (value === undefined) return fail('missing_signature', `header ${SIGNATURE} is missing`);
    const id = header(input.headers, ID);
    if (id === undefined) return fail('malformed', `header ${ID} is missing`);
    const timestamp = header(input.headers, TIMESTAMP);
    if (timestamp === undefined) return fail('malformed', `header ${TIMESTAMP} is missing`);
    const timestampMs = RFC3339.test(timestamp) ? Date.parse(timestamp) : Number.NaN;
    if (Number.isNaN(timestampMs)) return fail('malformed', `header ${TIMESTAMP} is not an RFC 3339 time`);
    const signature = stripPrefix(value, 'sha256=');
    if (signature === undefined) return fail('malformed', `header ${SIGNATURE} does not start with "sha256="`);
    const given = decodeHex(signature);
    if (given === undefined) return fail('malformed', `header ${SIGNATURE} is not hex`);
    if (!matchesAny(hmac('sha256', input.secret, id, timestamp, input.rawBody), [given])) {
      return fail(
        'bad_signature',
        `header ${SIGNATURE} does not match the message id, timestamp and body signed with the secret`,
      );
    }
    return checkTolerance(timestampMs, input.now, TOLERANCE_SECONDS, `header ${TIMESTAMP}`) ?? success(id);
  },
};
