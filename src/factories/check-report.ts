/**
 * What the `agentyard/factory-config` check run shows for a pull request's head: a conclusion, a title, a
 * Markdown summary of the plan (what `agentyard plan` prints) and one annotation per diagnostic at its file and
 * line in the repository. Pure.
 */
import path from 'node:path';
import type { Diagnostic } from '../definitions/diagnostic.ts';
import type { Change, PlanWarning } from './apply/model.ts';
import { formatChanges, summary as countChanges } from './plan-text.ts';

export const CHECK_NAME = 'agentyard/factory-config';
/** GitHub takes at most 50 annotations per request; the rest go in further updates. */
export const ANNOTATIONS_PER_REQUEST = 50;
/** Annotations sent at most; the summary counts the rest. */
export const MAX_ANNOTATIONS = 1_000;
/** GitHub's limit of `output.summary` and `output.text`. */
const SUMMARY_LIMIT = 65_535;

export type Conclusion = 'success' | 'failure' | 'neutral';

export interface CheckAnnotation {
  path: string;
  start_line: number;
  end_line: number;
  start_column?: number;
  end_column?: number;
  annotation_level: 'failure' | 'warning' | 'notice';
  title: string;
  message: string;
}

export interface CheckReport {
  conclusion: Conclusion;
  title: string;
  summary: string;
  annotations: CheckAnnotation[];
}

/** A path of the factory tree as a path of the repository (the factory may live in a sub-directory). */
function repoPath(sourcePath: string | null, file: string): string {
  const inTree = file || 'factory.yaml';
  return sourcePath ? path.posix.join(sourcePath, inTree) : inTree;
}

function annotation(
  sourcePath: string | null,
  level: CheckAnnotation['annotation_level'],
  at: { file: string; line: number; column?: number; code: string; message: string },
): CheckAnnotation {
  const line = Math.max(1, Math.trunc(at.line) || 1);
  const column = at.column !== undefined && at.column > 1 ? Math.trunc(at.column) : undefined;
  return {
    path: repoPath(sourcePath, at.file),
    start_line: line,
    end_line: line,
    ...(column !== undefined ? { start_column: column, end_column: column } : {}),
    annotation_level: level,
    title: at.code.slice(0, 255),
    message: at.message.slice(0, 4_000),
  };
}

function bounded(text: string): string {
  if (text.length <= SUMMARY_LIMIT) return text;
  const note = '\n\n… (cut at GitHub’s summary limit)';
  return text.slice(0, SUMMARY_LIMIT - note.length) + note;
}

function annotationsOf(
  sourcePath: string | null,
  diagnostics: readonly Diagnostic[],
  warnings: readonly PlanWarning[],
): { annotations: CheckAnnotation[]; dropped: number } {
  const all = [
    ...diagnostics.map((d) => annotation(sourcePath, d.severity === 'error' ? 'failure' : 'warning', d)),
    ...warnings.map((w) => annotation(sourcePath, 'warning', w)),
  ];
  return { annotations: all.slice(0, MAX_ANNOTATIONS), dropped: Math.max(0, all.length - MAX_ANNOTATIONS) };
}

export interface PlanOutcome {
  factoryName: string;
  /** The factory's directory in the repository (null: the root). */
  sourcePath: string | null;
  appliedRevision: string | null;
  headSha: string;
  diagnostics: readonly Diagnostic[];
  /** Absent when the tree is refused. */
  changes?: readonly Change[];
  warnings?: readonly PlanWarning[];
}

/** The report of a head that was read: refused with its errors, or the plan of what merging would apply. */
export function planReport(outcome: PlanOutcome): CheckReport {
  const errors = outcome.diagnostics.filter((d) => d.severity === 'error');
  const { annotations, dropped } = annotationsOf(outcome.sourcePath, outcome.diagnostics, outcome.warnings ?? []);
  const more = dropped > 0 ? `\n\n${dropped} more diagnostics are not annotated here.` : '';
  const head = `Factory \`${outcome.factoryName}\`, head \`${outcome.headSha.slice(0, 12)}\` against the live revision \`${outcome.appliedRevision ?? 'none'}\`.`;
  if (errors.length > 0 || !outcome.changes) {
    const n = errors.length;
    const list = errors
      .slice(0, 50)
      .map((d) => `- \`${repoPath(outcome.sourcePath, d.file)}:${d.line}:${d.column}\` ${d.code}: ${d.message}`)
      .join('\n');
    return {
      conclusion: 'failure',
      title: `The factory definition has ${n} error${n === 1 ? '' : 's'}: merging would apply nothing`,
      summary: bounded(
        `${head}\n\nMerging this pull request would be refused as a whole; the factory would keep serving its live revision.\n\n${list}${n > 50 ? `\n- … and ${n - 50} more` : ''}${more}`,
      ),
      annotations,
    };
  }
  const changes = outcome.changes;
  const counted = countChanges(changes);
  const body = changes.length
    ? `\`\`\`text\n${formatChanges(changes)}\`\`\``
    : 'No changes: the live state already matches.';
  const notes = annotations.length
    ? `\n\n${annotations.length} warning${annotations.length === 1 ? '' : 's'} annotated.`
    : '';
  return {
    conclusion: 'success',
    title: `Merging would apply: ${counted}`,
    summary: bounded(`${head}\n\n${body}\n\n${counted}.${notes}${more}`),
    annotations,
  };
}

/** The report of a head that could not be checked (not fetched, too big, the factory gone). */
export function problemReport(conclusion: Conclusion, title: string, detail: string): CheckReport {
  return { conclusion, title: title.slice(0, 255), summary: bounded(detail), annotations: [] };
}
