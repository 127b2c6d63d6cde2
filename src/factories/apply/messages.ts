import type { Diagnostic } from '../../definitions/diagnostic.ts';
import { sanitizeMessage } from '../../sources/url.ts';

/** Status messages are "what failed: cause" and name the revision (Flux style); never a token or a value. */
export function appliedMessage(revision: string): string {
  return `Applied revision: ${revision}`;
}

export function validationFailedMessage(revision: string, diagnostics: readonly Diagnostic[]): string {
  const errors = diagnostics.filter((d) => d.severity === 'error');
  const first = errors[0];
  const where = first ? `; first: ${first.file}:${first.line}:${first.column} ${first.code} ${first.message}` : '';
  return `validate ${revision}: ${errors.length} error${errors.length === 1 ? '' : 's'}${where}`;
}

export function deletionBlockedMessage(revision: string, count: number): string {
  return `apply ${revision}: refused: it would delete every webhook and automation of the factory (${count}); sync the factory explicitly (POST /factories/{id}/sync) to apply it`;
}

export function applyFailedMessage(revision: string, err: unknown): string {
  const cause = err instanceof Error ? err.message : String(err);
  return `apply ${revision}: ${sanitizeMessage(cause.split('\n')[0] ?? cause)}`;
}

export function fetchFailedMessage(where: string, err: unknown): string {
  const cause = err instanceof Error ? err.message : String(err);
  return `fetch ${where}: ${sanitizeMessage(cause.split('\n')[0] ?? cause)}`;
}
