/**
 * The generic `command` harness: any executable. It gets the run as one JSON document on stdin (then EOF)
 * and reports events as JSON lines on stdout, in Agentyard's own event format (docs/harnesses.md).
 */
import { RUN_EVENT_TYPES } from '../../runs/events.ts';
import type { RunEventType } from '../../runs/events.ts';
import type { AgentEvent, ExecutionPlan } from '../plan.ts';
import { jsonLine, readExitCommon, splitMcpServers, str } from './common.ts';
import type { HarnessAdapter, OutputParser } from './types.ts';

export const COMMAND_RUN_FORMAT = 'agentyard.run/v1';

/** The document on the command's stdin. */
export function commandRunDocument(plan: ExecutionPlan, workspace: string, prompt: string): Record<string, unknown> {
  return {
    format: COMMAND_RUN_FORMAT,
    run_id: plan.runId,
    execution_id: plan.executionId,
    attempt: plan.attempt,
    title: plan.title,
    prompt,
    run_prompt: plan.runPrompt,
    base_prompt: plan.basePrompt ?? null,
    model_id: plan.modelId ?? null,
    reasoning_level: plan.reasoningLevel ?? null,
    skill: plan.skill
      ? plan.skill.resolved
        ? { spec: plan.skill.spec, name: plan.skill.name, path: `.agents/skills/${plan.skill.name}/SKILL.md` }
        : { spec: plan.skill.spec, name: plan.skill.name, unresolved: plan.skill.reason }
      : null,
    attachments: plan.attachments.map((a) => a.fileName),
    mcp_servers: Object.fromEntries(splitMcpServers(plan.mcpServers).usable),
    resume_session_id: plan.resumeSessionId ?? null,
    followups: plan.followups,
    workspace,
    source: plan.run.source,
    config: plan.run.config,
    metadata: plan.run.metadata,
    created_at: plan.run.createdAt,
    session_link: plan.run.sessionLink,
  };
}

/** Event members the `command` format names explicitly; the rest of a line is the event's data. */
function commandParser(): OutputParser {
  return {
    line(text) {
      const ev = jsonLine(text);
      if (!ev) return text.trim() ? [{ type: 'log', data: { stream: 'stdout', text } }] : [];
      const type = str(ev.type);
      if (!type || !(RUN_EVENT_TYPES as readonly string[]).includes(type) || type === 'state' || type === 'followup') {
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
  async prepare({ plan, workspace, bin, extraArgs, prompt }) {
    if (!bin) throw new Error('the command harness has no executable: set AGENTYARD_HARNESS_COMMAND_BIN');
    return {
      command: bin,
      args: extraArgs,
      env: { ...plan.secretEnv },
      input: `${JSON.stringify(commandRunDocument(plan, workspace.dir, prompt))}\n`,
      keepStdinOpen: false,
    };
  },
  parser: commandParser,
  readExit: (code, signal, lastResult) => readExitCommon('the command', code, signal, lastResult),
};
