/**
 * The generic `command` harness: any executable. It gets the run as one JSON document on stdin (then EOF)
 * and reports events as JSON lines on stdout, in Agentyard's own event format (docs/harnesses.md).
 */
import { RUN_EVENT_TYPES } from '../../runs/events.ts';
import type { RunEventType } from '../../runs/events.ts';
import type { AgentEvent, Assignment } from '../assignment.ts';
import { jsonLine, readExitCommon, splitMcpServers, str } from './common.ts';
import type { HarnessAdapter, OutputParser } from './types.ts';

export const COMMAND_RUN_FORMAT = 'agentyard.run/v1';

/** The document on the command's stdin. */
export function commandRunDocument(assignment: Assignment, workspace: string, prompt: string): Record<string, unknown> {
  return {
    format: COMMAND_RUN_FORMAT,
    run_id: assignment.runId,
    execution_id: assignment.executionId,
    attempt: assignment.attempt,
    title: assignment.title,
    prompt,
    run_prompt: assignment.runPrompt,
    base_prompt: assignment.basePrompt ?? null,
    model_id: assignment.modelId ?? null,
    reasoning_level: assignment.reasoningLevel ?? null,
    skill: assignment.skill
      ? assignment.skill.resolved
        ? {
            spec: assignment.skill.spec,
            name: assignment.skill.name,
            path: `.agents/skills/${assignment.skill.name}/SKILL.md`,
          }
        : { spec: assignment.skill.spec, name: assignment.skill.name, unresolved: assignment.skill.reason }
      : null,
    attachments: assignment.attachments.map((a) => a.fileName),
    mcp_servers: Object.fromEntries(splitMcpServers(assignment.mcpServers).usable),
    resume_session_id: assignment.resumeSessionId ?? null,
    followups: assignment.followups,
    workspace,
    source: assignment.run.source,
    config: assignment.run.config,
    metadata: assignment.run.metadata,
    created_at: assignment.run.createdAt,
    session_link: assignment.run.sessionLink,
  };
}

/** Event members the `command` format names explicitly; the rest of a line is the event's data. */
export function commandParser(): OutputParser {
  return {
    line(text) {
      const ev = jsonLine(text);
      if (!ev) return text.trim() ? [{ type: 'log', data: { stream: 'stdout', text } }] : [];
      const type = str(ev.type);
      if (
        !type ||
        !(RUN_EVENT_TYPES as readonly string[]).includes(type) ||
        type === 'state' ||
        type === 'followup' ||
        type === 'egress'
      ) {
        return [{ type: 'log', data: { stream: 'stdout', text } }];
      }
      const { type: _type, at, ...data } = ev;
      if (type === 'message' && data.role === undefined) data.role = 'assistant';
      const event: AgentEvent = { type: type as RunEventType, data };
      if (typeof at === 'string' && !Number.isNaN(Date.parse(at))) event.at = at;
      return [event];
    },
    end: () => [],
  };
}

export const commandHarness: HarnessAdapter = {
  type: 'command',
  liveFollowups: false,
  resumes: true,
  async prepare({ assignment, workspace, bin, extraArgs, prompt }) {
    if (!bin) throw new Error('the command harness has no executable: set AGENTYARD_HARNESS_COMMAND_BIN');
    return {
      command: bin,
      args: extraArgs,
      env: { ...assignment.secretEnv },
      input: `${JSON.stringify(commandRunDocument(assignment, workspace.dir, prompt))}\n`,
      keepStdinOpen: false,
    };
  },
  parser: commandParser,
  readExit: (code, signal, lastResult) => readExitCommon('the command', code, signal, lastResult),
};
