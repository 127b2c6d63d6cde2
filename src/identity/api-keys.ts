import { hash } from 'node:crypto';
import { randomToken } from '../kernel/ids.ts';

export const API_KEY_PREFIX = 'ayk_';

export function generateApiKey(): string {
  return `${API_KEY_PREFIX}${randomToken(30)}`;
}

/** Every authenticated request hashes its key: the one-shot `crypto.hash` costs about half of a Hash object. */
export function hashApiKey(key: string): string {
  return hash('sha256', key, 'hex');
}

/** What a listing shows of a key: enough to recognise it, never enough to use it. */
export function displayPrefix(key: string): string {
  return key.slice(0, Math.min(12, Math.max(4, key.length - 8)));
}
