/**
 * A run's conversation in the reference's ConversationResponse shape, built from its stored events: one step
 * per execution; the prompt and follow-ups as user messages; agent text, tool calls (`action`) and their
 * results (`action_result`); skill loads as `read_skill` actions; state changes and results as `event` blocks.
 */
import type { Queryable } from '../kernel/db.ts';
import type { StoredRunEvent } from '../engine/events.ts';
import type { RunRow } from '../engine/model.ts';
import { loadAllEvents, loadExecutions } from './sql.ts';

export type ContentBlock =
  | { type: 'text'; text: string; message_id?: string }
  | { type: 'action'; id: string; category: string; name: string; input: Record<string, unknown>; message_id?: string }
  | {
      type: 'action_result';
      action_id: string;
      category: string;
      name: string;
      state: 'running' | 'completed' | 'failed' | 'denied';
      output: Record<string, unknown>;
      message_id?: string;
    }
  | { type: 'event'; name: string; data: Record<string, unknown>; message_id?: string };

export interface ConversationMessage {
  role: 'user' | 'assistant' | 'tool' | 'system';
  content: ContentBlock[];
  message_ids?: string[];
  timestamp?: string;
}

export interface ConversationStep {
  id: string;
  description?: string;
  summary?: string;
  started_at?: string;
  completed_at?: string;
  messages: ConversationMessage[];
  steps: ConversationStep[];
}

export interface ConversationResponse {
  conversation_id: string;
  steps: ConversationStep[];
}

export interface ExecutionSummary {
  id: string;
  run_id: string;
  attempt: number;
  harness: string;
  started_at: Date | null;
  ended_at: Date | null;
  claimed_at: Date;
}

const CATEGORIES = new Set(['command', 'files', 'search', 'integration', 'documents', 'computer', 'review', 'skill']);

function category(value: unknown): string {
  return typeof value === 'string' && CATEGORIES.has(value) ? value : 'command';
}

function objectOf(value: unknown): Record<string, unknown> {
  return value && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : { value: value ?? null };
}

/** One run's steps (the conversation of a run, or its part of a longer conversation). */
export function runSteps(
  run: RunRow,
  executions: readonly ExecutionSummary[],
  events: readonly StoredRunEvent[],
): ConversationStep[] {
  const steps = new Map<string, ConversationStep>();
  const ordered: ConversationStep[] = [];
  const stepFor = (executionId: string | null): ConversationStep => {
    const key =
      executionId && executions.some((e) => e.id === executionId) ? executionId : (ordered.at(-1)?.id ?? run.id);
    let step = steps.get(key);
    if (!step) {
      const exec = executions.find((e) => e.id === key);
      step = {
        id: key,
        description: exec ? `Execution ${exec.attempt} (${exec.harness} harness)` : 'Queued',
        ...(exec?.started_at ? { started_at: exec.started_at.toISOString() } : {}),
        ...(exec?.ended_at ? { completed_at: exec.ended_at.toISOString() } : {}),
        messages: [],
        steps: [],
      };
      steps.set(key, step);
      ordered.push(step);
    }
    return step;
  };
  const prompt: ConversationMessage = {
    role: 'user',
    content: [{ type: 'text', text: run.prompt, message_id: `${run.id}:prompt` }],
    message_ids: [`${run.id}:prompt`],
    timestamp: run.created_at.toISOString(),
  };
  const first = stepFor(executions[0]?.id ?? null);
  first.messages.push(prompt);

  const push = (
    step: ConversationStep,
    role: ConversationMessage['role'],
    block: ContentBlock,
    id: string,
    at: string,
  ): void => {
    const last = step.messages.at(-1);
    // consecutive blocks of one role form one message
    if (last && last.role === role && role !== 'user') {
      last.content.push(block);
      last.message_ids?.push(id);
      return;
    }
    step.messages.push({ role, content: [block], message_ids: [id], timestamp: at });
  };

  for (const e of events) {
    const step = stepFor(e.execution_id);
    const id = `${e.run_id}:${e.sequence}`;
    const at = e.occurred_at.toISOString();
    const d = e.data;
    switch (e.type) {
      case 'message': {
        const role = d.role === 'user' || d.role === 'system' ? d.role : 'assistant';
        if (typeof d.text === 'string') push(step, role, { type: 'text', text: d.text, message_id: id }, id, at);
        break;
      }
      case 'followup':
        // follow-ups built into an execution's prompt are the start of that step
        if (typeof d.message === 'string')
          step.messages.push({
            role: 'user',
            content: [{ type: 'text', text: d.message, message_id: id }],
            message_ids: [id],
            timestamp: at,
          });
        break;
      case 'tool_call':
        push(
          step,
          'assistant',
          {
            type: 'action',
            id: String(d.id ?? id),
            category: category(d.category),
            name: String(d.name ?? 'tool'),
            input: objectOf(d.input),
            message_id: id,
          },
          id,
          at,
        );
        break;
      case 'tool_result':
        push(
          step,
          'tool',
          {
            type: 'action_result',
            action_id: String(d.id ?? ''),
            category: category(d.category),
            name: String(d.name ?? 'tool'),
            state: d.status === 'failed' ? 'failed' : d.status === 'denied' ? 'denied' : 'completed',
            output: objectOf(d.output),
            message_id: id,
          },
          id,
          at,
        );
        break;
      case 'skill': {
        // a skill of the package (read_skill of the factory interface) is named by its id, not a path
        const input: Record<string, unknown> =
          typeof d.bundled_skill_id === 'string'
            ? { bundled_skill_id: d.bundled_skill_id, name: d.name }
            : { skill_path: d.skill_path ?? d.spec, skill_spec: d.spec, name: d.name };
        push(
          step,
          'assistant',
          { type: 'action', id: `skill-${e.sequence}`, category: 'skill', name: 'read_skill', input, message_id: id },
          id,
          at,
        );
        push(
          step,
          'tool',
          {
            type: 'action_result',
            action_id: `skill-${e.sequence}`,
            category: 'skill',
            name: 'read_skill',
            state: d.resolved === true ? 'completed' : 'failed',
            output: d.resolved === true ? { source: d.source ?? null } : { error: d.reason ?? 'not resolved' },
            message_id: id,
          },
          id,
          at,
        );
        break;
      }
      case 'result':
        if (typeof d.text === 'string' && d.text)
          step.summary = d.text.length > 2000 ? `${d.text.slice(0, 1999)}…` : d.text;
        push(step, 'system', { type: 'event', name: 'result', data: d, message_id: id }, id, at);
        break;
      case 'state':
      case 'status':
      case 'usage':
      case 'session':
      case 'error':
      case 'artifact':
      case 'report':
      case 'question':
      case 'reply':
        push(step, 'system', { type: 'event', name: e.type, data: d, message_id: id }, id, at);
        break;
      default:
        // logs belong to the transcript, not the conversation
        break;
    }
  }
  return ordered;
}

/** The conversation of runs (one run, or every run of a conversation id), oldest run first. */
export async function buildConversation(
  q: Queryable,
  conversationId: string,
  runs: readonly RunRow[],
): Promise<ConversationResponse> {
  const executions = await loadExecutions(
    q,
    runs.map((r) => r.id),
  );
  const steps: ConversationStep[] = [];
  for (const run of runs) {
    steps.push(
      ...runSteps(
        run,
        executions.filter((e) => e.run_id === run.id),
        await loadAllEvents(q, run.id),
      ),
    );
  }
  return { conversation_id: conversationId, steps };
}
