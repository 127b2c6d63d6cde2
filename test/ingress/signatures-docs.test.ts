/** docs/webhook-providers.md stays in step with the registry. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SIGNATURE_SCHEMES } from '../../src/ingress/signatures/index.ts';

const doc = readFileSync(new URL('../../docs/webhook-providers.md', import.meta.url), 'utf8');
const lower = doc.toLowerCase();

function section(id: string): string {
  const start = doc.search(new RegExp(`^## .*\\(\`${id}\`\\)$`, 'm'));
  if (start < 0) return '';
  const next = doc.indexOf('\n## ', start + 1);
  return doc.slice(start, next < 0 ? undefined : next).toLowerCase();
}

describe('docs/webhook-providers.md', () => {
  it.each(Object.values(SIGNATURE_SCHEMES).map((s) => [s.id, s] as const))('documents %s', (id, scheme) => {
    expect(lower).toContain(`| \`${id}\` |`);
    const text = section(id);
    expect(text, `a "## … (\`${id}\`)" section`).not.toBe('');
    expect(text).toContain(scheme.signatureHeader);
    for (const name of scheme.deliveryIdHeaders) expect(lower).toContain(name);
    if (scheme.timestamp) {
      const seconds = scheme.timestamp.toleranceSeconds;
      const forms = [`${seconds} s`, `${seconds / 60} minute`];
      expect(
        forms.some((form) => text.includes(form)),
        `tolerance ${seconds} s in the section`,
      ).toBe(true);
    }
  });
});
