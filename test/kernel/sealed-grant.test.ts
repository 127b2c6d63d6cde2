import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { SecretCipher } from '../../src/secrets/crypto.ts';
import { openGrant, sealGrant } from '../../src/kernel/sealed-grant.ts';

const cipher = new SecretCipher(randomBytes(32));

describe('sealed grants', () => {
  it('opens a token of its own kind before it expires, with its fields', () => {
    const token = sealGrant(cipher, 'attachment', { t: 'team_1', r: 'run_1', f: 'a.txt', e: 2_000 });
    expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(openGrant(cipher, 'attachment', token, 1_999)).toEqual({
      grant: { t: 'team_1', r: 'run_1', f: 'a.txt', e: 2_000, k: 'attachment' },
    });
    expect(openGrant(cipher, 'attachment', token, 2_001)).toEqual({ refused: 'expired' });
  });

  it('refuses a token of another kind, another key, a changed byte, or no token at all', () => {
    const token = sealGrant(cipher, 'transcript', { t: 'team_1', r: 'run_1', e: Date.now() + 60_000 });
    expect(openGrant(cipher, 'attachment', token)).toEqual({ refused: 'invalid' });
    expect(openGrant(new SecretCipher(randomBytes(32)), 'transcript', token)).toEqual({ refused: 'invalid' });
    const bytes = Buffer.from(token, 'base64url');
    bytes[bytes.length - 1]! ^= 1;
    expect(openGrant(cipher, 'transcript', bytes.toString('base64url'))).toEqual({ refused: 'invalid' });
    for (const junk of ['', 'not a token', '%%%', 'A'.repeat(10_000)])
      expect(openGrant(cipher, 'transcript', junk)).toEqual({ refused: 'invalid' });
  });

  it('refuses a sealed value that is not a grant', () => {
    for (const value of ['null', '[1]', '"text"', '{"k":"transcript"}', '{"k":"transcript","e":"soon"}'])
      expect(openGrant(cipher, 'transcript', cipher.encrypt(value).toString('base64url'))).toEqual({
        refused: 'invalid',
      });
  });
});
