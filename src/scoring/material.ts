/**
 * What a judge sees of a run, as text: its prompt, its transcript (messages, tool calls with their output,
 * follow-ups), its result and its artifacts. Long parts are cut so the whole stays within a budget.
 */
import type { RunMaterialRow } from './sql.ts';

/** Most characters of run material sent to a judge. */
export const MAX_MATERIAL = 60_000;
const MAX_PART = 4_000;

function clip(text: string, max = MAX_PART): string {
  return text.length <= max ? text : `${text.slice(0, max)}… [${text.length - max} characters cut]`;
}

function show(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value ?? null);
}

export function transcriptLine(e: { type: string; data: Record<string, unknown> }): string | undefined {
  const d = e.data;
  switch (e.type) {
    case 'message':
      return `[${show(d.role ?? 'assistant')}] ${clip(show(d.text))}`;
    case 'tool_call':
      return `[tool call ${show(d.name)}] ${clip(show(d.input), 1_000)}`;
    case 'tool_result':
      return `[tool result ${show(d.name)}: ${show(d.status)}] ${clip(show(d.output))}`;
    case 'followup':
      return `[user follow-up] ${clip(show(d.message))}`;
    case 'error':
      return `[error] ${clip(show(d.message), 1_000)}`;
    default:
      return undefined;
  }
}

export function runMaterial(
  run: RunMaterialRow,
  events: readonly { type: string; data: Record<string, unknown> }[],
): string {
  const result = [...events].reverse().find((e) => e.type === 'result');
  const head = [`## Prompt\n${clip(run.prompt, 12_000)}`, `## Final state\n${run.state}`];
  const tail = [
    `## Result\n${result ? clip(show(result.data.text), 12_000) : '(no result)'}`,
    `## Artifacts\n${run.artifacts.length ? clip(JSON.stringify(run.artifacts, null, 1), 6_000) : '(none)'}`,
  ];
  const budget = MAX_MATERIAL - head.join('\n\n').length - tail.join('\n\n').length - 100;
  const lines = events.map(transcriptLine).filter((l): l is string => l !== undefined);
  // the end of a long transcript matters most: keep the latest lines that fit
  const kept: string[] = [];
  let size = 0;
  for (let i = lines.length - 1; i >= 0; i--) {
    size += lines[i]!.length + 1;
    if (size > budget) {
      kept.unshift(`[… ${i + 1} earlier transcript entries cut]`);
      break;
    }
    kept.unshift(lines[i]!);
  }
  return [...head, `## Transcript\n${kept.join('\n') || '(empty)'}`, ...tail].join('\n\n');
}
