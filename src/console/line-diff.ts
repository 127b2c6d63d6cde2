/** A unified line diff (longest common subsequence), for showing a revision's files against the applied ones. */

export type DiffLine = { kind: ' ' | '+' | '-'; text: string };

/** Past this many cells the LCS table costs too much for a page: the caller shows no line diff. */
const MAX_CELLS = 4_000_000;

/** The lines of `before` and `after` in order, each kept, added or removed; undefined when too large to compute. */
export function lineDiff(before: string, after: string): DiffLine[] | undefined {
  const a = before.split('\n');
  const b = after.split('\n');
  if (a.length * b.length > MAX_CELLS) return undefined;
  const width = b.length + 1;
  // lcs[i * width + j]: the longest common subsequence of a[i..] and b[j..].
  const lcs = new Uint32Array((a.length + 1) * width);
  for (let i = a.length - 1; i >= 0; i--)
    for (let j = b.length - 1; j >= 0; j--)
      lcs[i * width + j] =
        a[i] === b[j]
          ? lcs[(i + 1) * width + j + 1]! + 1
          : Math.max(lcs[(i + 1) * width + j]!, lcs[i * width + j + 1]!);
  const out: DiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      out.push({ kind: ' ', text: a[i]! });
      i++;
      j++;
    } else if (lcs[(i + 1) * width + j]! >= lcs[i * width + j + 1]!) out.push({ kind: '-', text: a[i++]! });
    else out.push({ kind: '+', text: b[j++]! });
  }
  while (i < a.length) out.push({ kind: '-', text: a[i++]! });
  while (j < b.length) out.push({ kind: '+', text: b[j++]! });
  return out;
}

/** The diff as unified-diff text: `@@ -a,n +b,m @@` hunks with `context` unchanged lines around each change. */
export function unifiedDiff(lines: readonly DiffLine[], context = 3): string {
  const changed = lines.map((l) => l.kind !== ' ');
  const keep = lines.map((_, k) => {
    for (let d = Math.max(0, k - context); d <= Math.min(lines.length - 1, k + context); d++)
      if (changed[d]) return true;
    return false;
  });
  const hunks: string[] = [];
  let k = 0;
  let oldLine = 1;
  let newLine = 1;
  while (k < lines.length) {
    if (!keep[k]) {
      if (lines[k]!.kind !== '+') oldLine++;
      if (lines[k]!.kind !== '-') newLine++;
      k++;
      continue;
    }
    const startOld = oldLine;
    const startNew = newLine;
    const body: string[] = [];
    while (k < lines.length && keep[k]) {
      const l = lines[k]!;
      body.push(`${l.kind}${l.text}`);
      if (l.kind !== '+') oldLine++;
      if (l.kind !== '-') newLine++;
      k++;
    }
    const oldCount = body.filter((b) => !b.startsWith('+')).length;
    const newCount = body.filter((b) => !b.startsWith('-')).length;
    hunks.push(`@@ -${startOld},${oldCount} +${startNew},${newCount} @@\n${body.join('\n')}`);
  }
  return hunks.join('\n');
}
