import { stripPrefix } from '../body-hmac.ts';
import { checkTolerance, decodeHex, fail, header, hmac, matchesAny, parseUnixSeconds, success } from '../primitives.ts';
import { providerIssuedSecret } from '../secrets.ts';
import type { SignatureScheme } from '../types.ts';

const SIGNATURE = 'x-slack-signature';
const TIMESTAMP = 'x-slack-request-timestamp';
const TOLERANCE_SECONDS = 5 * 60;

export const slack: SignatureScheme = {
  id: 'slack',
  displayName: 'Slack',
  headers: [SIGNATURE, TIMESTAMP, 'x-slack-retry-num', 'x-slack-retry-reason'],
  signatureHeader: SIGNATURE,
  signatureFormat: 'v0=<hex>',
  algorithm: 'hmac-sha256',
  signedContent: 'v0:{x-slack-request-timestamp}:{body}',
  encoding: 'hex',
  timestamp: { source: { header: TIMESTAMP }, unit: 'seconds', toleranceSeconds: TOLERANCE_SECONDS, required: true },
  deliveryIdHeaders: [],
  multipleSignatures: false,
  secret: providerIssuedSecret(
    "the app's Signing Secret (not the verification token, not a bot token)",
    'api.slack.com/apps → the app → Basic Information → App Credentials → Signing Secret',
  ),
  docsUrl: 'https://api.slack.com/authentication/verifying-requests-from-slack',
  notes: [
    'Slash commands and interactivity are form-encoded, not JSON: they verify, then the ingress refuses the body as invalid JSON. Use the Events API.',
    'The Events API url_verification handshake expects the challenge echoed back, which the ingress does not do: verify the URL with the handshake disabled or answer it elsewhere.',
    'No delivery-ID header; the body carries event_id, and retries repeat the same body, so the body hash deduplicates them.',
  ],
  verify(input) {
    const value = header(input.headers, SIGNATURE);
    if (value === undefined) return fail('missing_signature', `header ${SIGNATURE} is missing`);
    const timestampText = header(input.headers, TIMESTAMP);
    if (timestampText === undefined) return fail('malformed', `header ${TIMESTAMP} is missing`);
    const timestamp = parseUnixSeconds(timestampText);
    if (timestamp === undefined) return fail('malformed', `header ${TIMESTAMP} is not unix seconds`);
    const signature = stripPrefix(value, 'v0=');
    if (signature === undefined) return fail('malformed', `header ${SIGNATURE} does not start with "v0="`);
    const given = decodeHex(signature);
    if (given === undefined) return fail('malformed', `header ${SIGNATURE} is not hex`);
    const expected = hmac('sha256', input.secret, `v0:${timestampText}:`, input.rawBody);
    if (!matchesAny(expected, [given])) {
      return fail('bad_signature', `header ${SIGNATURE} does not match the timestamp and body signed with the secret`);
    }
    return checkTolerance(timestamp * 1000, input.now, TOLERANCE_SECONDS, `header ${TIMESTAMP}`) ?? success(undefined);
  },
};
