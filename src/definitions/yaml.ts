import { LineCounter, Parser, isAlias, isMap, isScalar, isSeq, parseAllDocuments, visit } from 'yaml';
import type { CST, Document, Node as YamlNode, ParsedNode, YAMLError } from 'yaml';
import type { DiagnosticCode } from './codes.ts';
import { MAX_YAML_DEPTH, excessiveDepth } from './depth.ts';
import { TREE_BUDGET, YAML_BUDGET, overBudget } from './work-budget.ts';
import type { BudgetItem, TreeBudget } from './work-budget.ts';
import type { Diagnostic } from './diagnostic.ts';

export interface Position {
  line: number;
  column: number;
}

/** Where a diagnostic should point: at the key of the addressed pair, or at its value. */
export type PositionTarget = 'key' | 'value';

/**
 * One parsed YAML file or Markdown frontmatter, with the document kept so that any JSON pointer
 * into the value can be turned back into a source position.
 */
export interface ParsedSource {
  file: string;
  /** The plain value (a mapping) when the file parsed without error; undefined otherwise. */
  value: Record<string, unknown> | undefined;
  /** Markdown only: the text after the closing fence, and the 1-based line it starts on. */
  body?: string;
  bodyLine?: number;
  diagnostics: Diagnostic[];
  locate(pointer: string, target?: PositionTarget): Position;
}

const START: Position = { line: 1, column: 1 };

export function decodePointer(pointer: string): string[] {
  if (pointer === '' || pointer === '/') return [];
  return pointer
    .replace(/^\//, '')
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

export function encodePointer(segments: readonly (string | number)[]): string {
  return segments.map((s) => `/${String(s).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
}

interface YamlBlock {
  text: string;
  /** Lines before the block in the file (the frontmatter fence). */
  lineOffset: number;
}

class SourceLocator {
  private readonly doc: Document.Parsed | undefined;
  private readonly counter: LineCounter;
  private readonly lineOffset: number;
  private readonly rootPosition: Position | undefined;

  constructor(doc: Document.Parsed | undefined, counter: LineCounter, lineOffset: number, rootPosition?: Position) {
    this.doc = doc;
    this.counter = counter;
    this.lineOffset = lineOffset;
    this.rootPosition = rootPosition;
  }

  at(offset: number): Position {
    const pos = this.counter.linePos(offset);
    return { line: pos.line + this.lineOffset, column: pos.col };
  }

  private ofNode(node: YamlNode | null | undefined): Position | undefined {
    const range = node?.range;
    return range ? this.at(range[0]) : undefined;
  }

  locate(pointer: string, target: PositionTarget = 'value'): Position {
    const root = this.doc?.contents;
    const segments = decodePointer(pointer);
    if (segments.length === 0) return this.rootPosition ?? this.ofNode(root) ?? START;
    let node: unknown = root;
    let best = this.rootPosition ?? this.ofNode(root as YamlNode) ?? START;
    for (let i = 0; i < segments.length; i++) {
      const seg = segments[i]!;
      const last = i === segments.length - 1;
      if (isMap(node)) {
        const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === seg);
        if (!pair) return best;
        const keyPos = this.ofNode(pair.key as YamlNode) ?? best;
        if (last && target === 'key') return keyPos;
        const implicitNull = isScalar(pair.value) && pair.value.value === null && !pair.value.source;
        const valuePos = implicitNull ? undefined : this.ofNode(pair.value as YamlNode);
        // `key:` with nothing after it has a null value without a range: the key is the closest place.
        best = valuePos ?? keyPos;
        node = pair.value;
      } else if (isSeq(node)) {
        const item = node.items[Number(seg)];
        if (item === undefined) return best;
        best = this.ofNode(item as YamlNode) ?? best;
        node = item;
      } else {
        return best;
      }
    }
    return best;
  }
}

type Emit = (code: DiagnosticCode, message: string, pos: Position, path?: string) => void;

function collector(file: string, diagnostics: Diagnostic[]): Emit {
  return (code, message, pos, path = '') => {
    diagnostics.push({ file, line: pos.line, column: pos.column, path, code, message, severity: 'error' });
  };
}

/** Anchors, aliases, explicit tags, merge keys and non-scalar keys: all refused by the format. */
function checkRestrictedSyntax(doc: Document.Parsed, source: string, locator: SourceLocator, emit: Emit): void {
  visit(doc, {
    Pair(_key, pair) {
      const key = pair.key as ParsedNode | null;
      if (key && !isScalar(key)) {
        emit('FF_INVALID_YAML', 'mapping keys must be plain scalars (strings or numbers)', locator.at(key.range[0]));
      } else if (isScalar(key) && key.value === '<<' && key.type === 'PLAIN') {
        emit('FF_INVALID_YAML', 'merge keys (`<<`) are not supported; write the keys out', locator.at(key.range[0]));
      }
    },
    Node(_key, node) {
      const parsed = node as ParsedNode;
      const start = parsed.range[0];
      if (isAlias(node)) {
        emit(
          'FF_ALIAS',
          `aliases are not supported (\`*${node.source}\`); repeat the value instead`,
          locator.at(start),
        );
        return;
      }
      if (node.anchor) {
        const at = source.lastIndexOf(`&${node.anchor}`, start);
        emit('FF_ANCHOR', `anchors are not supported (\`&${node.anchor}\`)`, locator.at(at >= 0 ? at : start));
      }
      if (node.tag) {
        let at = source.lastIndexOf('!', start);
        while (at > 0 && source[at - 1] === '!') at--;
        const written = at >= 0 ? (/^!\S*/.exec(source.slice(at))?.[0] ?? node.tag) : node.tag;
        emit(
          'FF_TAG',
          `explicit tags are not supported (\`${written}\`); write a plain value`,
          locator.at(at >= 0 ? at : start),
        );
      }
    },
  });
}

/** `duplicate key \`name\` (first on line 2)`: the repeated key, found in the mapping that holds it. */
/**
 * Each repeated key of a mapping, at the repeat, naming the line of the first, in source order: one pass with
 * a set per mapping (the parser's own `uniqueKeys` compares every key with every other).
 */
function duplicateKeys(doc: Document.Parsed, locator: SourceLocator, emit: Emit): void {
  const repeats: { at: number; message: string }[] = [];
  visit(doc, {
    Map(_key, map) {
      const seen = new Map<unknown, ParsedNode>();
      for (const pair of map.items) {
        const key = pair.key as ParsedNode | null;
        if (!isScalar(key)) continue;
        const first = seen.get(key.value);
        if (first === undefined) seen.set(key.value, key);
        else
          repeats.push({
            at: key.range[0],
            message: `duplicate key \`${String(key.value)}\` (first on line ${locator.at(first.range[0]).line})`,
          });
      }
    },
  });
  repeats.sort((a, b) => a.at - b.at);
  for (const repeat of repeats) emit('FF_DUPLICATE_KEY', repeat.message, locator.at(repeat.at));
}

const CLOSERS: Record<string, string> = { '[': ']', '{': '}', '"': '"', "'": "'" };

/**
 * The `[`, `{` or quote that an unclosed-construct error is about: the last such opener before the error
 * that has no closer and no earlier error of the file took. The parser reports these where it gave up (often
 * the next line); the opener is what the author has to fix.
 */
function unclosedOpener(
  tokens: readonly CST.Token[],
  error: YAMLError,
  taken: Set<number>,
): { char: string; offset: number } | undefined {
  const wanted =
    /end with an? ([\]}])/.exec(error.message)?.[1] ?? /Missing closing (["'])quote/.exec(error.message)?.[1];
  if (!wanted) return undefined;
  let found: { char: string; offset: number } | undefined;
  const consider = (char: string, offset: number) => {
    if (CLOSERS[char] === wanted || (char === wanted && (char === '"' || char === "'"))) {
      if (offset < error.pos[0] && !taken.has(offset) && (!found || offset > found.offset)) found = { char, offset };
    }
  };
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) {
      for (const v of value) walk(v);
      return;
    }
    if (!value || typeof value !== 'object') return;
    const token = value as Record<string, unknown> & { type?: string };
    if (token.type === 'flow-collection') {
      const flow = token as unknown as CST.FlowCollection;
      const closer = flow.start.type === 'flow-seq-start' ? 'flow-seq-end' : 'flow-map-end';
      const closed = flow.end.some((t) => t.type === closer);
      if (!closed) consider(flow.start.source, flow.start.offset);
    } else if (token.type === 'double-quoted-scalar' || token.type === 'single-quoted-scalar') {
      const scalar = token as unknown as CST.FlowScalar;
      if (!isClosedQuote(scalar.source)) consider(scalar.source[0]!, scalar.offset);
    }
    for (const [key, v] of Object.entries(token)) if (key !== 'source') walk(v);
  };
  walk(tokens);
  if (found) taken.add(found.offset);
  return found;
}

function isClosedQuote(source: string): boolean {
  const quote = source[0]!;
  if (source.length < 2 || !source.endsWith(quote)) return false;
  if (quote === "'") return /^'(?:[^']|'')*'$/.test(source);
  let backslashes = 0;
  for (let i = source.length - 2; i > 0 && source[i] === '\\'; i--) backslashes++;
  return backslashes % 2 === 0;
}

const BUDGET_WORDS: Record<BudgetItem, string> = {
  keys: 'mapping keys',
  nodes: 'values and collections',
  aliases: 'aliases',
};

function parseBlock(
  file: string,
  block: YamlBlock,
  emptyAllowed: boolean,
  rootPosition?: Position,
  tree?: TreeBudget,
): Omit<ParsedSource, 'body' | 'bodyLine'> {
  const diagnostics: Diagnostic[] = [];
  const emit = collector(file, diagnostics);
  const deep = excessiveDepth(block.text);
  if (deep) {
    emit('FF_LIMIT_EXCEEDED', `collections nest deeper than ${MAX_YAML_DEPTH} levels; the file is not parsed`, {
      line: deep.line + block.lineOffset,
      column: deep.column,
    });
    return { file, value: undefined, diagnostics, locate: () => rootPosition ?? START };
  }
  const over = overBudget(block.text, tree);
  if (over) {
    const what =
      over.scope === 'file'
        ? `the file has more than ${YAML_BUDGET[over.item]} ${BUDGET_WORDS[over.item]}`
        : `the factory files have more than ${TREE_BUDGET[over.item]} ${BUDGET_WORDS[over.item]} in all`;
    emit('FF_LIMIT_EXCEEDED', `${what}; it is not parsed`, {
      line: over.position.line + block.lineOffset,
      column: over.position.column,
    });
    return { file, value: undefined, diagnostics, locate: () => rootPosition ?? START };
  }
  const counter = new LineCounter();
  // Duplicate keys are found by `duplicateKeys` below in one pass: the parser's own check is quadratic.
  const docs = parseAllDocuments(block.text, {
    lineCounter: counter,
    uniqueKeys: false,
    keepSourceTokens: true,
    merge: false,
    prettyErrors: false,
    schema: 'core',
  });
  const doc = docs[0];
  const locator = new SourceLocator(doc, counter, block.lineOffset, rootPosition);
  const locate = (pointer: string, target?: PositionTarget): Position => locator.locate(pointer, target);
  const done = (value?: Record<string, unknown>) => ({ file, value, diagnostics, locate });

  if (docs.length > 1) {
    const second = docs[1]!;
    emit(
      'FF_INVALID_DOCUMENT',
      'a file holds exactly one YAML document; remove the extra `---` document',
      locator.at(second.range[0]),
    );
  }
  let tokens: CST.Token[] | undefined;
  const openersTaken = new Set<number>();
  for (const d of docs) {
    duplicateKeys(d, locator, emit);
    for (const error of d.errors) {
      const text = error.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
      tokens ??= [...new Parser().parse(block.text)];
      const opener = unclosedOpener(tokens, error, openersTaken);
      if (opener) {
        emit(
          'FF_INVALID_YAML',
          `YAML syntax error: this \`${opener.char}\` is never closed (${text})`,
          locator.at(opener.offset),
        );
      } else emit('FF_INVALID_YAML', `YAML syntax error: ${text}`, locator.at(error.pos[0]));
    }
  }
  if (
    !doc ||
    doc.contents === null ||
    (isScalar(doc.contents) && doc.contents.value === null && !doc.contents.source)
  ) {
    if (docs.length <= 1 && !emptyAllowed && diagnostics.length === 0) {
      emit('FF_INVALID_DOCUMENT', 'the file is empty; it must hold a YAML mapping', rootPosition ?? START);
    }
    return done(diagnostics.length === 0 && emptyAllowed ? {} : undefined);
  }
  checkRestrictedSyntax(doc, block.text, locator, emit);
  if (!isMap(doc.contents)) {
    emit(
      'FF_INVALID_DOCUMENT',
      'the document root must be a mapping of keys to values',
      locator.at(doc.contents.range[0]),
    );
  }
  if (diagnostics.length > 0) return done();
  return done(doc.toJS({ maxAliasCount: 0 }) as Record<string, unknown>);
}

/** A `.yaml` resource: one document whose root is a mapping. */
export function parseYamlSource(file: string, text: string, tree?: TreeBudget): ParsedSource {
  return parseBlock(file, { text: text.replace(/^\uFEFF/, ''), lineOffset: 0 }, false, undefined, tree);
}

/** Splits `text` into lines, keeping each line's start offset (handles LF and CRLF). */
function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
  return starts;
}

function lineAt(text: string, starts: number[], index: number): string {
  const start = starts[index]!;
  const next = starts[index + 1];
  return text.slice(start, next === undefined ? text.length : next - 1).replace(/\r$/, '');
}

/**
 * A Markdown resource: a `---` frontmatter fence (YAML mapping, may be empty) followed by the body.
 * Positions of frontmatter keys are lines of the `.md` file.
 */
export function parseMarkdownSource(file: string, raw: string, tree?: TreeBudget): ParsedSource {
  const text = raw.replace(/^\uFEFF/, '');
  const diagnostics: Diagnostic[] = [];
  const emit = collector(file, diagnostics);
  const fail = (): ParsedSource => ({ file, value: undefined, diagnostics, locate: () => START });
  if (text.trim() === '') {
    emit('FF_INVALID_DOCUMENT', 'the file is empty; it must open with a `---` frontmatter fence', START);
    return fail();
  }
  const starts = lineStarts(text);
  if (lineAt(text, starts, 0).trimEnd() !== '---') {
    emit(
      'FF_MALFORMED_FRONTMATTER',
      'a Markdown resource must start with a `---` line that opens the frontmatter',
      START,
    );
    return fail();
  }
  let close = -1;
  for (let i = 1; i < starts.length; i++) {
    if (lineAt(text, starts, i).trimEnd() === '---') {
      close = i;
      break;
    }
  }
  if (close === -1) {
    emit('FF_MALFORMED_FRONTMATTER', 'the frontmatter opened on line 1 is never closed by a `---` line', START);
    return fail();
  }
  const frontmatter = text.slice(starts[1]!, starts[close]!);
  const bodyStart = starts[close + 1];
  const body = bodyStart === undefined ? '' : text.slice(bodyStart);
  const parsed = parseBlock(file, { text: frontmatter, lineOffset: 1 }, true, START, tree);
  return { ...parsed, body, bodyLine: close + 2 };
}
