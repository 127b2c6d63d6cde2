/**
 * A grant sealed with the instance master key (AES-256-GCM through the Cipher: it can be neither read nor forged)
 * into a URL-safe token, for links that carry their own authorisation because their clients fetch them without
 * an API key (a transcript's download, an attachment's). Each token names its kind, so a token made for one kind
 * of link opens no other.
 */
import type { Cipher } from './caller.ts';

/** What a token holds besides its kind: its expiry, in milliseconds since the epoch, and the grant's fields. */
export type Grant = { e: number } & Record<string, string | number>;

export function sealGrant(cipher: Cipher, kind: string, grant: Grant): string {
  return cipher.encrypt(JSON.stringify({ ...grant, k: kind })).toString('base64url');
}

/** The grant a token holds when it is of this kind and unexpired; why not otherwise. */
export function openGrant(
  cipher: Cipher,
  kind: string,
  token: string,
  now = Date.now(),
): { grant: Record<string, unknown> } | { refused: 'invalid' | 'expired' } {
  let grant: unknown;
  try {
    grant = JSON.parse(cipher.decrypt(Buffer.from(token, 'base64url')));
  } catch {
    return { refused: 'invalid' };
  }
  if (!grant || typeof grant !== 'object' || Array.isArray(grant)) return { refused: 'invalid' };
  const fields = grant as Record<string, unknown>;
  if (fields.k !== kind || typeof fields.e !== 'number') return { refused: 'invalid' };
  if (fields.e < now) return { refused: 'expired' };
  return { grant: fields };
}
