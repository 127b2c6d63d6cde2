import { describe, expect, it } from 'vitest';
import { parseMarkdownSource, parseYamlSource } from '../../src/definitions/yaml.ts';

describe('parseYamlSource', () => {
  const text = 'name: x\nagentDefaults:\n  model: auto\n  secrets:\n    - a\n    - "b/c"\n  "we/ird~key": 1\nempty:\n';

  it('keeps the value and resolves pointers to positions', () => {
    const parsed = parseYamlSource('factory.yaml', text);
    expect(parsed.diagnostics).toEqual([]);
    expect(parsed.value).toEqual({
      name: 'x',
      agentDefaults: { model: 'auto', secrets: ['a', 'b/c'], 'we/ird~key': 1 },
      empty: null,
    });
    expect(parsed.locate('/agentDefaults/model')).toEqual({ line: 3, column: 10 });
    expect(parsed.locate('/agentDefaults/model', 'key')).toEqual({ line: 3, column: 3 });
    expect(parsed.locate('/agentDefaults/secrets/1')).toEqual({ line: 6, column: 7 });
    expect(parsed.locate('/agentDefaults/we~1ird~0key', 'key')).toEqual({ line: 7, column: 3 });
  });

  it('falls back to the closest ancestor for paths that do not exist', () => {
    const parsed = parseYamlSource('factory.yaml', text);
    expect(parsed.locate('/agentDefaults/runner')).toEqual({ line: 3, column: 3 });
    expect(parsed.locate('/agentDefaults/secrets/9')).toEqual({ line: 5, column: 5 });
    expect(parsed.locate('/nope/deeper')).toEqual({ line: 1, column: 1 });
    // `empty:` has no value node: the key is the closest place.
    expect(parsed.locate('/empty/child')).toEqual({ line: 8, column: 1 });
  });

  it('reports syntax errors with their position and no value', () => {
    const parsed = parseYamlSource('r.yaml', 'a: [1, 2\nb: 1\n');
    expect(parsed.value).toBeUndefined();
    expect(parsed.diagnostics[0]).toMatchObject({ code: 'FF_INVALID_YAML', severity: 'error' });
  });

  it('points an unclosed bracket, brace or quote at the character that opened it', () => {
    const at = (text: string) =>
      parseYamlSource('r.yaml', text).diagnostics.map((d) => [d.line, d.column, d.message.slice(0, 40)]);
    expect(at('authMode: token\nsecretName: [a, b\nenabled: true\n')).toEqual([
      [2, 13, 'YAML syntax error: this `[` is never clo'],
    ]);
    expect(at('a: {b: 1\nc: 2\n')).toEqual([[1, 4, 'YAML syntax error: this `{` is never clo']]);
    expect(at('authMode: "token\nsecretName: x\n')).toEqual([[1, 11, 'YAML syntax error: this `"` is never clo']]);
    expect(at("a: 'it''s\nb: 1\n")).toEqual([[1, 4, "YAML syntax error: this `'` is never clo"]]);
    // Nested openers: each error names its own.
    expect(at('a: [[1, 2\n').map(([line, column]) => [line, column])).toEqual([
      [1, 5],
      [1, 4],
    ]);
    expect(at('a: {x: [1, 2}\n').map(([line, column]) => [line, column])).toEqual([
      [1, 8],
      [1, 4],
    ]);
  });

  it('names the repeated key and where it first appeared', () => {
    const parsed = parseYamlSource('factory.yaml', 'name: a\nagentDefaults:\n  model: auto\n  model: x\nname: b\n');
    expect(parsed.diagnostics.map((d) => [d.code, d.line, d.column, d.message])).toEqual([
      ['FF_DUPLICATE_KEY', 4, 3, 'duplicate key `model` (first on line 3)'],
      ['FF_DUPLICATE_KEY', 5, 1, 'duplicate key `name` (first on line 1)'],
    ]);
  });

  it('keeps CRLF files and a BOM readable', () => {
    const parsed = parseYamlSource('r.yaml', '\uFEFFa: 1\r\nb:\r\n  c: 2\r\n');
    expect(parsed.value).toEqual({ a: 1, b: { c: 2 } });
    expect(parsed.locate('/b/c')).toEqual({ line: 3, column: 6 });
  });

  it('uses the YAML 1.2 core schema: yes/no and dates stay strings', () => {
    const parsed = parseYamlSource('r.yaml', 'a: yes\nb: 2024-01-01\nc: 0x10\n');
    expect(parsed.value).toEqual({ a: 'yes', b: '2024-01-01', c: 16 });
  });
});

describe('parseMarkdownSource', () => {
  it('reports frontmatter positions as lines of the .md file and splits off the body', () => {
    const parsed = parseMarkdownSource(
      'a.md',
      '---\nagentType: FOREMAN\nsecrets:\n  - one\n---\n\nYou are the foreman.\n',
    );
    expect(parsed.value).toEqual({ agentType: 'FOREMAN', secrets: ['one'] });
    expect(parsed.locate('/agentType')).toEqual({ line: 2, column: 12 });
    expect(parsed.locate('/secrets/0')).toEqual({ line: 4, column: 5 });
    expect(parsed.locate('')).toEqual({ line: 1, column: 1 });
    expect(parsed.body).toBe('\nYou are the foreman.\n');
    expect(parsed.bodyLine).toBe(6);
  });

  it('accepts an empty frontmatter as an empty mapping', () => {
    const parsed = parseMarkdownSource('a.md', '---\n---\nBody\n');
    expect(parsed.diagnostics).toEqual([]);
    expect(parsed.value).toEqual({});
    expect(parsed.body).toBe('Body\n');
  });

  it('handles CRLF fences', () => {
    const parsed = parseMarkdownSource('a.md', '---\r\na: 1\r\n---\r\nBody\r\n');
    expect(parsed.value).toEqual({ a: 1 });
    expect(parsed.locate('/a')).toEqual({ line: 2, column: 4 });
  });

  it('reports YAML errors inside the frontmatter at file lines', () => {
    const parsed = parseMarkdownSource('a.md', '---\na: 1\na: 2\n---\n');
    expect(parsed.diagnostics.map((d) => [d.code, d.line, d.column])).toEqual([['FF_DUPLICATE_KEY', 3, 1]]);
  });

  it('refuses a missing or unclosed fence', () => {
    expect(parseMarkdownSource('a.md', 'a: 1\n').diagnostics[0]?.code).toBe('FF_MALFORMED_FRONTMATTER');
    expect(parseMarkdownSource('a.md', '---\na: 1\n').diagnostics[0]?.code).toBe('FF_MALFORMED_FRONTMATTER');
  });
});
