import type { DiagnosticCode } from './codes.ts';

export type Severity = 'error' | 'warning';

/** One problem in one file. `line` and `column` are 1-based; `path` is a JSON pointer inside the file. */
export interface Diagnostic {
  file: string;
  line: number;
  column: number;
  path: string;
  code: DiagnosticCode | (string & {});
  message: string;
  severity: Severity;
}

export type DiagnosticFormat = 'text' | 'json' | 'github';

export function hasErrors(diagnostics: readonly Diagnostic[]): boolean {
  return diagnostics.some((d) => d.severity === 'error');
}

export function compareDiagnostics(a: Diagnostic, b: Diagnostic): number {
  if (a.file !== b.file) return a.file < b.file ? -1 : 1;
  return a.line - b.line || a.column - b.column || (a.code < b.code ? -1 : a.code > b.code ? 1 : 0);
}

/** Sorted by position, identical entries (same place, code and message) kept once. */
export function normalizeDiagnostics(diagnostics: readonly Diagnostic[]): Diagnostic[] {
  return uniqueDiagnostics([...diagnostics].sort(compareDiagnostics));
}

/** Identical entries (same place, code and message) kept once, in their order. */
export function uniqueDiagnostics<T extends Diagnostic>(diagnostics: readonly T[]): T[] {
  const seen = new Set<string>();
  return diagnostics.filter((d) => {
    const key = `${d.file}\0${d.line}\0${d.column}\0${d.code}\0${d.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** `file:line:column: severity code: message`, one line per diagnostic (identical ones once). */
export function formatText(diagnostics: readonly Diagnostic[]): string {
  return uniqueDiagnostics(diagnostics)
    .map((d) => `${d.file}:${d.line}:${d.column}: ${d.severity} ${d.code}: ${d.message}\n`)
    .join('');
}

/** A JSON array of diagnostics (stable key order). */
export function formatJson(diagnostics: readonly Diagnostic[]): string {
  const rows = uniqueDiagnostics(diagnostics).map((d) => ({
    file: d.file,
    line: d.line,
    column: d.column,
    path: d.path,
    code: d.code,
    severity: d.severity,
    message: d.message,
  }));
  return `${JSON.stringify(rows, null, 2)}\n`;
}

function escapeGithubData(value: string): string {
  return value.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}

function escapeGithubProperty(value: string): string {
  return escapeGithubData(value).replace(/:/g, '%3A').replace(/,/g, '%2C');
}

/** GitHub Actions workflow commands: `::error file=…,line=…,col=…,title=CODE::message`. */
export function formatGithub(diagnostics: readonly Diagnostic[]): string {
  return uniqueDiagnostics(diagnostics)
    .map((d) => {
      const props = `file=${escapeGithubProperty(d.file)},line=${d.line},col=${d.column},title=${escapeGithubProperty(d.code)}`;
      return `::${d.severity} ${props}::${escapeGithubData(`${d.code}: ${d.message}`)}\n`;
    })
    .join('');
}

export function formatDiagnostics(diagnostics: readonly Diagnostic[], format: DiagnosticFormat): string {
  switch (format) {
    case 'json':
      return formatJson(diagnostics);
    case 'github':
      return formatGithub(diagnostics);
    default:
      return formatText(diagnostics);
  }
}
