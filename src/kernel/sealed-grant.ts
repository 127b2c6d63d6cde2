/**
 * A grant sealed with the instance master key (AES-256-GCM through the Cipher: it can be neither read nor forged)
 * into a URL-safe token, for links that carry their own authorisation because their clients fetch them without
 * an API key (a transcript's download, an attachment's). Each token names its kind, so a token made for one kind
 * of link opens no other.
 */
import type { Cipher } from './caller.ts';
import { AppError } from './errors.ts';

/** What a token holds besides its kind: its expiry, in milliseconds since the epoch, and the grant's fields. */
export type Grant = { e: number } & Record<string, string | number>;

export function sealGrant(cipher: Cipher, kind: string, grant: Grant): string {
  return cipher.encrypt(JSON.stringify({ ...grant, k: kind })).toString('base64url');
}

/** What a refused token answers (404 `resource_not_found`): an invalid one (forged, of another kind), an expired one. */
export interface GrantRefusals {
  invalid: string;
  expired: string;
}

/** The grant a token holds when it is of this kind and unexpired; AppError `resource_not_found` otherwise. */
export function openGrant(
  cipher: Cipher,
  kind: string,
  token: string,
  refusals: GrantRefusals,
  now = Date.now(),
): Record<string, unknown> {
  let grant: unknown;
  try {
    grant = JSON.parse(cipher.decrypt(Buffer.from(token, 'base64url')));
  } catch {
    throw new AppError('resource_not_found', refusals.invalid);
  }
  const fields = grant && typeof grant === 'object' && !Array.isArray(grant) ? (grant as Record<string, unknown>) : {};
  if (fields.k !== kind || typeof fields.e !== 'number') throw new AppError('resource_not_found', refusals.invalid);
  if (fields.e < now) throw new AppError('resource_not_found', refusals.expired);
  return fields;
}
