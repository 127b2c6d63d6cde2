import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { redact, secretForms } from '../../src/execution/redaction.ts';

/** Whether any base64 reading of `text` (from any offset, either alphabet) holds `secret`'s bytes. */
function base64Holds(text: string, secret: Buffer): boolean {
  const tokens = text.split(/[^A-Za-z0-9+/_=-]+/);
  return tokens.some((token) =>
    [0, 1, 2, 3].some((offset) =>
      (['base64', 'base64url'] as const).some((alphabet) =>
        Buffer.from(token.slice(offset), alphabet).includes(secret),
      ),
    ),
  );
}

describe('redaction of secret values', () => {
  it('replaces the value and its URL-encoded forms', () => {
    const secret = 'p@ss word/+&key';
    const forms = secretForms(secret);
    const text = `a ${secret} b ${encodeURIComponent(secret)} c ${new URLSearchParams({ k: secret }).toString()}`;
    const out = redact(text, forms);
    expect(out).toBe('a [redacted] b [redacted] c k=[redacted]');
  });

  it('leaves no base64 copy readable: any offset, both alphabets, padded or not, inside longer text', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 6, maxLength: 48, unit: 'binary' }),
        fc.uint8Array({ maxLength: 7 }),
        fc.uint8Array({ maxLength: 7 }),
        fc.constantFrom('base64', 'base64url') as fc.Arbitrary<'base64' | 'base64url'>,
        fc.boolean(),
        (secret, before, after, alphabet, pad) => {
          const bytes = Buffer.from(secret, 'utf8');
          let encoded = Buffer.concat([before, bytes, after]).toString(alphabet);
          if (!pad) encoded = encoded.replace(/=+$/, '');
          expect(base64Holds(encoded, bytes)).toBe(true);
          const out = redact({ nested: [`prefix ${encoded} suffix`] }, secretForms(secret));
          expect(out.nested[0]).toContain('[redacted]');
          expect(base64Holds(out.nested[0]!, bytes)).toBe(false);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('walks events without touching keys or non-string values', () => {
    const forms = secretForms('sk-live-123456');
    expect(redact({ 'sk-live-123456': 1, n: 2, list: ['sk-live-123456'] }, forms)).toEqual({
      'sk-live-123456': 1,
      n: 2,
      list: ['[redacted]'],
    });
  });
});
