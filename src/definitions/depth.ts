import { CST, Lexer } from 'yaml';
import type { Position } from './yaml.ts';

/** Deepest nesting of collections a factory file may use; deeper files are refused before parsing. */
export const MAX_YAML_DEPTH = 100;

const SCALAR = '\x1f';
const SKIPPED = new Set(['\x02', '\x18', '\uFEFF']);

/**
 * Where `text` first nests collections deeper than `limit`, or undefined. Runs on the YAML lexer's tokens
 * (linear, stops at the first excess), so 100,000 `[` or `- - - …` are refused long before the parser's
 * recursion would start: flow depth plus the block levels open on the line (the indent columns seen).
 */
export function excessiveDepth(text: string, limit = MAX_YAML_DEPTH): Position | undefined {
  let line = 1;
  let column = 0;
  let flow = 0;
  let lineStart = true;
  let afterIndicator = false;
  let scalarNext = false;
  const blocks: number[] = [];

  const openBlock = (at: number): void => {
    while (blocks.length > 0 && blocks[blocks.length - 1]! > at) blocks.pop();
    if (blocks.length === 0 || blocks[blocks.length - 1]! < at) blocks.push(at);
  };
  const advance = (token: string): void => {
    const newline = token.lastIndexOf('\n');
    if (newline < 0) {
      column += token.length;
      return;
    }
    for (let i = token.indexOf('\n'); i !== -1; i = token.indexOf('\n', i + 1)) line++;
    column = token.length - newline - 1;
  };

  for (const token of new Lexer().lex(text)) {
    if (token === SCALAR) {
      scalarNext = true;
      continue;
    }
    if (SKIPPED.has(token)) continue;
    const type = scalarNext ? 'scalar' : CST.tokenType(token);
    scalarNext = false;
    switch (type) {
      case 'newline':
        line++;
        column = 0;
        lineStart = true;
        afterIndicator = false;
        continue;
      case 'space':
      case 'comment':
        advance(token);
        continue;
      case 'doc-start':
        blocks.length = 0;
        flow = 0;
        break;
      case 'flow-seq-end':
      case 'flow-map-end':
        flow = Math.max(0, flow - 1);
        break;
      case 'seq-item-ind':
      case 'explicit-key-ind':
        if (flow === 0) {
          openBlock(column);
          afterIndicator = true;
          lineStart = false;
          if (blocks.length > limit) return { line, column: column + 1 };
          advance(token);
          continue;
        }
        break;
      default:
        if (flow === 0 && (lineStart || afterIndicator)) openBlock(column);
        if (type === 'flow-seq-start' || type === 'flow-map-start') flow++;
    }
    if (flow + blocks.length > limit) return { line, column: column + 1 };
    lineStart = false;
    afterIndicator = false;
    advance(token);
  }
  return undefined;
}
