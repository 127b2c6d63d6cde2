import { CST, Lexer } from 'yaml';
import type { Position } from './yaml.ts';

/**
 * The most work one YAML file (or Markdown frontmatter) may ask of the parser and validator, counted on the
 * lexer's tokens before anything is parsed. Size alone does not bound it: 278 KB of `kNNNNN: v` lines are
 * 20,000 keys. Real factory files use a few hundred.
 */
export const YAML_BUDGET = {
  /** Mapping keys (`:` indicators, block and flow). */
  keys: 5_000,
  /** Scalars and collections. */
  nodes: 20_000,
  /** `*alias` references (the format refuses them; this many are refused unparsed). */
  aliases: 100,
} as const;

export type BudgetItem = keyof typeof YAML_BUDGET;

/** The most one factory tree (every file of one validation or apply) may ask for in all. */
export const TREE_BUDGET: Readonly<Record<BudgetItem, number>> = { keys: 20_000, nodes: 80_000, aliases: 100 };

/** What is left of a tree's budget; each file within its own budget spends from it. */
export class TreeBudget {
  readonly left: Record<BudgetItem, number>;

  constructor(limits: Readonly<Record<BudgetItem, number>> = TREE_BUDGET) {
    this.left = { ...limits };
  }
}

const SCALAR = '\x1f';

/**
 * The first place where `text` goes over the file's budget (or what is left of the tree's), and what it
 * exceeded; undefined within budget, and then the tree's budget is spent. Stops lexing there, so a hostile
 * file costs at most the budget's worth of tokens.
 */
export function overBudget(
  text: string,
  tree?: TreeBudget,
  budget: Readonly<Record<BudgetItem, number>> = YAML_BUDGET,
): { item: BudgetItem; scope: 'file' | 'tree'; position: Position } | undefined {
  const counts: Record<BudgetItem, number> = { keys: 0, nodes: 0, aliases: 0 };
  let offset = 0;
  let scalarNext = false;
  for (const token of new Lexer().lex(text)) {
    let item: BudgetItem | undefined;
    if (token === SCALAR) {
      scalarNext = true;
      continue;
    }
    const type = scalarNext ? 'scalar' : CST.tokenType(token);
    scalarNext = false;
    if (type === 'scalar' || type === 'flow-map-start' || type === 'flow-seq-start' || type === 'seq-item-ind')
      item = 'nodes';
    else if (type === 'map-value-ind') item = 'keys';
    else if (type === 'alias') item = 'aliases';
    if (item !== undefined) {
      const count = ++counts[item];
      if (count > budget[item]) return { item, scope: 'file', position: positionAt(text, offset) };
      if (tree && count > tree.left[item]) return { item, scope: 'tree', position: positionAt(text, offset) };
    }
    offset += token.length;
  }
  if (tree) for (const item of Object.keys(counts) as BudgetItem[]) tree.left[item] -= counts[item];
  return undefined;
}

/** The 1-based line and column of `offset`, counted only when a refusal needs it. */
function positionAt(text: string, offset: number): Position {
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return { line, column: offset - lineStart + 1 };
}
