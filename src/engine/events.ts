/**
 * The events of a run: state changes (written by a trigger on every state change), and what its executions
 * report (agent messages, tool calls and results, usage, the agent's session id, follow-ups delivered...).
 * Each run numbers its events 1, 2, 3... without gaps and in commit order: a writer takes the next numbers
 * under the run's row lock, so a reader that has seen event n never later finds an event below n.
 */
export type RunEventType =
  | 'state'
  | 'status'
  | 'message'
  | 'tool_call'
  | 'tool_result'
  | 'usage'
  | 'result'
  | 'session'
  | 'skill'
  | 'followup'
  | 'log'
  | 'error'
  | 'artifact'
  // the factory interface (docs/orchestration.md): written by the server only, never taken from an agent's output
  | 'report'
  | 'question'
  | 'reply'
  | 'egress';

export const RUN_EVENT_TYPES: readonly RunEventType[] = [
  'state',
  'status',
  'message',
  'tool_call',
  'tool_result',
  'usage',
  'result',
  'session',
  'skill',
  'followup',
  'log',
  'error',
  'artifact',
  'report',
  'question',
  'reply',
  'egress',
];

/** Event types only Agentyard writes: an agent reporting one (the `command` harness) is logged as text instead. */
export const SERVER_EVENT_TYPES: ReadonlySet<RunEventType> = new Set([
  'state',
  'followup',
  'report',
  'question',
  'reply',
  'egress',
]);

/** What an execution reports; `data` is documented per type in docs/execution.md. */
export interface NewRunEvent {
  type: RunEventType;
  data: Record<string, unknown>;
  /** Defaults to the time of writing. */
  occurredAt?: Date;
}

export interface StoredRunEvent {
  run_id: string;
  sequence: number;
  execution_id: string | null;
  type: RunEventType;
  data: Record<string, unknown>;
  occurred_at: Date;
}

/** Longest text kept in one event member; longer text is cut and marked. */
export const MAX_EVENT_TEXT = 64 * 1024;

/** A copy of an event's data with its long text cut (MAX_EVENT_TEXT) and deep nesting stopped. */
export function clip(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') {
    return value.length > MAX_EVENT_TEXT
      ? `${value.slice(0, MAX_EVENT_TEXT)}… [${value.length - MAX_EVENT_TEXT} characters cut]`
      : value;
  }
  if (depth > 8) return '[nested too deeply]';
  if (Array.isArray(value)) return value.slice(0, 1000).map((v) => clip(v, depth + 1));
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, clip(v, depth + 1)]),
    );
  }
  return value;
}
