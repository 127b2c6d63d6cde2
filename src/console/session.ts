import { CONSOLE_SESSION_COOKIE } from '../kernel/api.ts';
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Cipher } from '../kernel/caller.ts';

export const SESSION_COOKIE = CONSOLE_SESSION_COOKIE;
/** How long a console sign-in lasts; the API key's own expiry and revocation still apply at every request. */
export const SESSION_LIFETIME_SECONDS = 12 * 60 * 60;

// Sealed values of other uses of the master key never open as a session.
const PURPOSE = 'agentyard-console-session:';

/** Who signed in, as /whoami answered at sign-in: shown in the header without asking again on every page. */
export interface SessionIdentity {
  teamName: string;
  displayName: string;
  role: 'admin' | 'member';
  instanceAdmin: boolean;
}

export interface ConsoleSession {
  /** The API key the person signed in with: the console calls the API with it, so it has the key's rights. */
  key: string;
  identity: SessionIdentity;
  /** Per-session token every form carries back (CSRF). */
  csrf: string;
  /** Unix seconds. */
  expires: number;
}

/** The cookie value: the session sealed with the instance master key (AES-256-GCM), so only this server reads it. */
export function sealSession(
  cipher: Cipher,
  key: string,
  identity: SessionIdentity,
  now = Date.now(),
): { value: string; session: ConsoleSession } {
  const session: ConsoleSession = {
    key,
    identity,
    csrf: randomBytes(18).toString('base64url'),
    expires: Math.floor(now / 1000) + SESSION_LIFETIME_SECONDS,
  };
  return { value: cipher.encrypt(PURPOSE + JSON.stringify(session)).toString('base64url'), session };
}

export function openSession(cipher: Cipher, value: string | undefined, now = Date.now()): ConsoleSession | undefined {
  if (!value || value.length > 4096) return undefined;
  try {
    const plain = cipher.decrypt(Buffer.from(value, 'base64url'));
    if (!plain.startsWith(PURPOSE)) return undefined;
    const parsed = JSON.parse(plain.slice(PURPOSE.length)) as Partial<ConsoleSession>;
    if (
      typeof parsed.key !== 'string' ||
      typeof parsed.csrf !== 'string' ||
      typeof parsed.expires !== 'number' ||
      typeof parsed.identity !== 'object' ||
      parsed.identity === null
    ) {
      return undefined;
    }
    if (parsed.expires * 1000 <= now) return undefined;
    return { key: parsed.key, identity: parsed.identity, csrf: parsed.csrf, expires: parsed.expires };
  } catch {
    return undefined;
  }
}

export function csrfMatches(session: ConsoleSession, sent: unknown): boolean {
  if (typeof sent !== 'string') return false;
  const a = Buffer.from(session.csrf);
  const b = Buffer.from(sent);
  return a.length === b.length && timingSafeEqual(a, b);
}

export function sessionCookie(value: string, secure: boolean): string {
  return [
    `${SESSION_COOKIE}=${value}`,
    'Path=/',
    'HttpOnly',
    'SameSite=Strict',
    `Max-Age=${SESSION_LIFETIME_SECONDS}`,
    ...(secure ? ['Secure'] : []),
  ].join('; ');
}

export function clearedSessionCookie(secure: boolean): string {
  return [
    `${SESSION_COOKIE}=`,
    'Path=/',
    'HttpOnly',
    'SameSite=Strict',
    'Max-Age=0',
    ...(secure ? ['Secure'] : []),
  ].join('; ');
}

export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}
