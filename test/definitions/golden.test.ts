import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DIAGNOSTIC_CODES } from '../../src/definitions/codes.ts';
import { formatText } from '../../src/definitions/diagnostic.ts';
import { readFactoryDir, validateFactory } from '../../src/definitions/index.ts';
import type { FactoryFileInput } from '../../src/definitions/index.ts';

// Each case under fixtures/cases/<name>/ is an overlay on fixtures/base/: its files replace or add to the
// base tree, `remove.txt` lists base paths to delete, and `expected.txt` is the exact `agentyard validate`
// text output (golden). Regenerate with UPDATE_GOLDEN=1 and review the diff.
const FIXTURES = new URL('./fixtures/', import.meta.url);
const CASES = new URL('cases/', FIXTURES);
const update = process.env.UPDATE_GOLDEN === '1';

async function caseTree(name: string): Promise<FactoryFileInput[]> {
  const dir = new URL(`${name}/`, CASES);
  const base = await readFactoryDir(new URL('base/', FIXTURES).pathname);
  const overlay = await readFactoryDir(dir.pathname);
  const removeFile = new URL('remove.txt', dir);
  const removed = new Set(
    existsSync(removeFile)
      ? readFileSync(removeFile, 'utf8')
          .split('\n')
          .map((l) => l.trim())
          .filter(Boolean)
      : [],
  );
  const byPath = new Map<string, FactoryFileInput>();
  for (const file of base)
    if (![...removed].some((r) => file.path === r || file.path.startsWith(`${r}/`))) byPath.set(file.path, file);
  for (const file of overlay) byPath.set(file.path, file);
  return [...byPath.values()];
}

const caseNames = readdirSync(CASES).sort();

describe('golden diagnostics', () => {
  it('the base tree is valid and produces no diagnostic', async () => {
    const result = await validateFactory(await readFactoryDir(new URL('base/', FIXTURES).pathname));
    expect(formatText(result.diagnostics)).toBe('');
    expect(result.valid).toBe(true);
    expect(result.definition).toBeDefined();
  });

  for (const name of caseNames) {
    it(name, async () => {
      const result = await validateFactory(await caseTree(name));
      const text = formatText(result.diagnostics);
      const expectedFile = new URL(`${name}/expected.txt`, CASES);
      if (update) writeFileSync(expectedFile, text);
      expect(text).toBe(readFileSync(expectedFile, 'utf8'));
      expect(result.valid).toBe(!result.diagnostics.some((d) => d.severity === 'error'));
      expect(result.definition !== undefined).toBe(result.valid);
    });
  }

  it('every diagnostic code has a golden case', () => {
    const seen = new Set<string>();
    for (const name of caseNames) {
      const text = readFileSync(new URL(`${name}/expected.txt`, CASES), 'utf8');
      for (const m of text.matchAll(/: (?:error|warning) (FF_[A-Z_]+):/g)) seen.add(m[1]!);
    }
    expect([...Object.keys(DIAGNOSTIC_CODES)].filter((code) => !seen.has(code))).toEqual([]);
  });
});
