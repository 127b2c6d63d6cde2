/**
 * Issue 28, item 6: factory files are budgeted by work (keys, nodes, aliases), per file and per tree, counted
 * on the lexer before anything is parsed; duplicate keys are found in one pass.
 */
import { describe, expect, it } from 'vitest';
import { validateFactory } from '../../src/definitions/validate.ts';
import { TREE_BUDGET, TreeBudget, YAML_BUDGET, overBudget } from '../../src/definitions/work-budget.ts';
import { parseYamlSource } from '../../src/definitions/yaml.ts';

const keys = (n: number, prefix = 'k') => Array.from({ length: n }, (_, i) => `${prefix}${i}: v`).join('\n');

describe('the YAML work budget', () => {
  it('counts keys, nodes and aliases and says where the file went over', () => {
    expect(overBudget(keys(YAML_BUDGET.keys))).toBeUndefined();
    expect(overBudget(keys(YAML_BUDGET.keys + 1))).toMatchObject({
      item: 'keys',
      scope: 'file',
      position: { line: YAML_BUDGET.keys + 1 },
    });
    const flow = `a: [${Array.from({ length: YAML_BUDGET.nodes }, () => '1').join(', ')}]`;
    expect(overBudget(flow)).toMatchObject({ item: 'nodes', position: { line: 1 } });
    const aliases = `a: &x 1\n${Array.from({ length: YAML_BUDGET.aliases + 1 }, (_, i) => `b${i}: *x`).join('\n')}`;
    expect(overBudget(aliases)).toMatchObject({ item: 'aliases' });
    // Block scalars and quoted text are values, not keys.
    expect(
      overBudget(`a: |\n${'  x: y\n'.repeat(YAML_BUDGET.keys + 10)}b: "${'c: d '.repeat(6000)}"\n`),
    ).toBeUndefined();
  });

  it('spends a tree budget across files and refuses the file that goes over it', () => {
    const tree = new TreeBudget({ ...TREE_BUDGET, keys: 7 });
    expect(overBudget(keys(4), tree)).toBeUndefined();
    expect(tree.left.keys).toBe(3);
    expect(overBudget(keys(4), tree)).toMatchObject({ item: 'keys', scope: 'tree' });
  });

  it('refuses over-budget files of a tree with FF_LIMIT_EXCEEDED naming each, unparsed', async () => {
    const files = [{ path: 'factory.yaml', content: `name: big\nx:\n${keys(20_000, '  k')}\n` }];
    const result = await validateFactory(files);
    expect(result.valid).toBe(false);
    expect(result.diagnostics).toContainEqual(
      expect.objectContaining({
        code: 'FF_LIMIT_EXCEEDED',
        file: 'factory.yaml',
        message: `the file has more than ${YAML_BUDGET.keys} mapping keys; it is not parsed`,
      }),
    );
    // Under one unknown key, so that each file costs one diagnostic.
    const many = Array.from({ length: 5 }, (_, f) => ({
      path: `runners/r${f}.yaml`,
      content: `x:\n${keys(4_500, '  k')}`,
    }));
    const tree = await validateFactory([{ path: 'factory.yaml', content: 'name: t\n' }, ...many]);
    expect(tree.diagnostics).toContainEqual(
      expect.objectContaining({
        code: 'FF_LIMIT_EXCEEDED',
        file: 'runners/r4.yaml',
        message: `the factory files have more than ${TREE_BUDGET.keys} mapping keys in all; it is not parsed`,
      }),
    );
  });

  it('finds 4,000 repeated keys in one pass, each naming the first', () => {
    const text = `${keys(2_000)}\n${keys(2_000)}\n`;
    const parsed = parseYamlSource('r.yaml', text);
    expect(parsed.diagnostics).toHaveLength(2_000);
    expect(parsed.diagnostics[0]).toMatchObject({ code: 'FF_DUPLICATE_KEY', line: 2_001 });
    expect(parsed.diagnostics[0]!.message).toBe('duplicate key `k0` (first on line 1)');
  });
});
