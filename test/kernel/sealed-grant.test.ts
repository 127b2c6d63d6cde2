import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { SecretCipher } from '../../src/secrets/crypto.ts';
import { openGrant, sealGrant } from '../../src/kernel/sealed-grant.ts';

const cipher = new SecretCipher(randomBytes(32));
const REFUSALS = { invalid: 'invalid link', expired: 'expired link' };
const refusal = (open: () => unknown): string => {
  try {
    open();
  } catch (err) {
    expect(err).toMatchObject({ code: 'resource_not_found', status: 404 });
    return (err as { detail: string }).detail;
  }
  throw new Error('the token was not refused');
};

describe('sealed grants', () => {
  it('opens a token of its own kind before it expires, with its fields', () => {
    const token = sealGrant(cipher, 'attachment', { t: 'team_1', r: 'run_1', f: 'a.txt', e: 2_000 });
    expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(openGrant(cipher, 'attachment', token, REFUSALS, 1_999)).toEqual({
      t: 'team_1',
      r: 'run_1',
      f: 'a.txt',
      e: 2_000,
      k: 'attachment',
    });
    expect(refusal(() => openGrant(cipher, 'attachment', token, REFUSALS, 2_001))).toBe('expired link');
  });

  it('refuses a token of another kind, another key, a changed byte, or no token at all', () => {
    const token = sealGrant(cipher, 'transcript', { t: 'team_1', r: 'run_1', e: Date.now() + 60_000 });
    expect(refusal(() => openGrant(cipher, 'attachment', token, REFUSALS))).toBe('invalid link');
    const other = new SecretCipher(randomBytes(32));
    expect(refusal(() => openGrant(other, 'transcript', token, REFUSALS))).toBe('invalid link');
    const bytes = Buffer.from(token, 'base64url');
    bytes[bytes.length - 1]! ^= 1;
    expect(refusal(() => openGrant(cipher, 'transcript', bytes.toString('base64url'), REFUSALS))).toBe('invalid link');
    for (const junk of ['', 'not a token', '%%%', 'A'.repeat(10_000)])
      expect(refusal(() => openGrant(cipher, 'transcript', junk, REFUSALS))).toBe('invalid link');
  });

  it('refuses a sealed value that is not a grant', () => {
    for (const value of ['null', '[1]', '"text"', '{"k":"transcript"}', '{"k":"transcript","e":"soon"}']) {
      const token = cipher.encrypt(value).toString('base64url');
      expect(refusal(() => openGrant(cipher, 'transcript', token, REFUSALS))).toBe('invalid link');
    }
  });
});
