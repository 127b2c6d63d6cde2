/**
 * The forms of a secret value that redaction looks for in what an agent reports: the value itself, its
 * URL-encoded forms, and its base64 (standard and URL-safe alphabets, padded or not). Base64 of a value that
 * sits inside a longer encoded text depends on its offset modulo 3, so each of the three alignments gives its
 * own form: the characters that only the value's bytes determine (a few bits at either end stay visible).
 */

/** Characters of base64(prefix ‖ value) that depend only on the value's bytes, for a prefix of `offset` bytes. */
function base64Core(value: Buffer, offset: 0 | 1 | 2): string {
  const encoded = Buffer.concat([Buffer.alloc(offset), value]).toString('base64');
  // The first character holding no prefix bit, and the last holding no bit of whatever follows the value.
  const first = offset === 0 ? 0 : offset === 1 ? 2 : 3;
  const end = Math.floor(((offset + value.length) * 8) / 6);
  return encoded.slice(first, end);
}

/** Every form to redact of `secret`, longest first; forms shorter than `minLength` are left out. */
export function secretForms(secret: string, minLength = 6): string[] {
  const forms = new Set<string>([
    secret,
    encodeURIComponent(secret),
    new URLSearchParams({ s: secret }).toString().slice(2),
  ]);
  const bytes = Buffer.from(secret, 'utf8');
  for (const offset of [0, 1, 2] as const) {
    const core = base64Core(bytes, offset);
    forms.add(core);
    forms.add(core.replaceAll('+', '-').replaceAll('/', '_'));
  }
  return [...forms].filter((f) => f.length >= minLength).sort((a, b) => b.length - a.length);
}

/** Replaces every form of every secret in the strings of `value` (object keys are left alone). */
export function redact<T>(value: T, forms: readonly string[]): T {
  if (forms.length === 0) return value;
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string')
      return forms.reduce((s, form) => (s.includes(form) ? s.split(form).join('[redacted]') : s), v);
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object')
      return Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return walk(value) as T;
}
