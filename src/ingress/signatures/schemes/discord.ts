import { decodeHex, ed25519PublicKey, ed25519Verify, fail, header, success } from '../primitives.ts';
import { basicSecretProblem, providerIssuedSecret } from '../secrets.ts';
import type { SignatureScheme } from '../types.ts';

const SIGNATURE = 'x-signature-ed25519';
const TIMESTAMP = 'x-signature-timestamp';

function publicKeyProblem(secret: string): string | undefined {
  const raw = decodeHex(secret);
  return raw === undefined || raw.length !== 32 ? 'a Discord public key is 64 hex digits' : undefined;
}

export const discord: SignatureScheme = {
  id: 'discord',
  displayName: 'Discord (interactions endpoint)',
  headers: [SIGNATURE, TIMESTAMP],
  signatureHeader: SIGNATURE,
  signatureFormat: '<hex Ed25519 signature, 128 digits>',
  algorithm: 'ed25519',
  signedContent: '{x-signature-timestamp}{body}',
  encoding: 'hex',
  deliveryIdHeaders: [],
  multipleSignatures: false,
  secret: providerIssuedSecret(
    "the application's Public Key (64 hex digits); no secret is involved",
    'Discord Developer Portal → the application → General Information → Public Key',
    publicKeyProblem,
    'ed25519_public_hex',
  ),
  docsUrl: 'https://discord.com/developers/docs/interactions/receiving-and-responding#security-and-authorization',
  notes: [
    'Discord sends deliberately bad signatures and removes endpoints that accept them; these get 401.',
    'Discord expects a PING (type 1) to be answered with a PONG body; the ingress answers 202 with a delivery ID, so the portal check of the endpoint URL needs an interactions responder in front.',
    'No timestamp tolerance is documented, so none is applied.',
  ],
  verify(input) {
    const value = header(input.headers, SIGNATURE);
    if (value === undefined) return fail('missing_signature', `header ${SIGNATURE} is missing`);
    const timestamp = header(input.headers, TIMESTAMP);
    if (timestamp === undefined) return fail('malformed', `header ${TIMESTAMP} is missing`);
    const signature = decodeHex(value);
    if (signature === undefined || signature.length !== 64) {
      return fail('malformed', `header ${SIGNATURE} is not 128 hex digits`);
    }
    const problem = basicSecretProblem(input.secret) ?? publicKeyProblem(input.secret);
    if (problem !== undefined) return fail('malformed', `the configured public key is unusable: ${problem}`);
    const key = ed25519PublicKey(decodeHex(input.secret)!);
    const message = Buffer.concat([Buffer.from(timestamp, 'utf8'), input.rawBody]);
    if (!ed25519Verify(key, message, signature)) {
      return fail('bad_signature', `header ${SIGNATURE} is not a valid signature of the timestamp and body`);
    }
    return success(undefined);
  },
};
