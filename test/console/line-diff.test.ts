/** The console's line diff: LCS order, unified hunks with their line numbers, and a bound on its cost. */
import { describe, expect, it } from 'vitest';
import { lineDiff, unifiedDiff } from '../../src/console/line-diff.ts';

describe('the line diff', () => {
  it('keeps the common lines and marks the rest, as unified hunks', () => {
    const before = 'a\nb\nc\nd\ne\nf\ng\nh\ni\nj';
    const after = 'a\nb\nc\nD\ne\nf\ng\nh\ni\nj\nk';
    const diff = lineDiff(before, after)!;
    expect(diff.filter((l) => l.kind !== ' ')).toEqual([
      { kind: '-', text: 'd' },
      { kind: '+', text: 'D' },
      { kind: '+', text: 'k' },
    ]);
    expect(unifiedDiff(diff)).toBe('@@ -1,10 +1,11 @@\n a\n b\n c\n-d\n+D\n e\n f\n g\n h\n i\n j\n+k');
  });

  it('splits distant changes into hunks with their own line numbers', () => {
    const lines = Array.from({ length: 20 }, (_, i) => `l${i + 1}`);
    const after = [...lines];
    after[1] = 'two';
    after[17] = 'eighteen';
    const text = unifiedDiff(lineDiff(lines.join('\n'), after.join('\n'))!);
    expect(text.match(/^@@.*@@$/gm)).toEqual(['@@ -1,5 +1,5 @@', '@@ -15,6 +15,6 @@']);
    expect(text).toContain('-l2\n+two');
    expect(text).toContain('-l18\n+eighteen');
  });

  it('declines a diff too large to compute', () => {
    const big = Array.from({ length: 3000 }, (_, i) => String(i)).join('\n');
    expect(lineDiff(big, `${big}\nx`)).toBeUndefined();
  });
});
