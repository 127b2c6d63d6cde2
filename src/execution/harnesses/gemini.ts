/**
 * Gemini CLI: `gemini --output-format stream-json --approval-mode yolo --prompt …` with the task on stdin (the
 * CLI prepends piped stdin to the prompt) and `~/.gemini/settings.json` (MCP servers) in the agent's home
 * inside the workspace. A follow-up continues with `--resume <session id>` in the next execution.
 */
import path from 'node:path';
import type { AgentEvent } from '../assignment.ts';
import { writeWorkspaceFile } from '../workspace.ts';
import {
  jsonLine,
  num,
  obj,
  readExitCommon,
  splitMcpServers,
  isSseUrl,
  str,
  toolEvents,
  withFactoryServer,
} from './common.ts';
import type { ExitReading, HarnessAdapter, OutputParser } from './types.ts';

export const GEMINI_PROMPT_FLAG_TEXT = 'Carry out the task given above (from standard input).';

/** Gemini CLI's settings.json: the run's MCP servers and the factory interface. */
export function geminiSettings(assignment: Parameters<typeof withFactoryServer>[0]): Record<string, unknown> {
  const mcpServers = Object.fromEntries(
    splitMcpServers(withFactoryServer(assignment)).usable.map(([name, s]) => [
      name,
      s.command
        ? { command: s.command, args: s.args ?? [], env: s.env ?? {}, trust: true }
        : {
            ...(isSseUrl(s.url!) ? { url: s.url } : { httpUrl: s.url }),
            ...(s.headers ? { headers: s.headers } : {}),
            trust: true,
          },
    ]),
  );
  return { mcpServers };
}

function geminiParser(): OutputParser {
  let pending = '';
  const tools = toolEvents();
  const flush = (): AgentEvent[] => {
    if (!pending) return [];
    const text = pending;
    pending = '';
    return [{ type: 'message', data: { role: 'assistant', text } }];
  };
  return {
    line(text) {
      const ev = jsonLine(text);
      if (!ev) return text.trim() ? [{ type: 'log', data: { stream: 'stdout', text } }] : [];
      if (ev.type === 'message' && ev.role === 'assistant' && ev.delta === true) {
        pending += str(ev.content) ?? '';
        return [];
      }
      const out = flush();
      switch (ev.type) {
        case 'init':
          if (str(ev.session_id))
            out.push({
              type: 'session',
              data: { session_id: ev.session_id, ...(str(ev.model) ? { model: ev.model } : {}) },
            });
          break;
        case 'message':
          if (ev.role === 'assistant' && str(ev.content))
            out.push({ type: 'message', data: { role: 'assistant', text: ev.content } });
          break;
        case 'tool_use':
          out.push(tools.call(str(ev.tool_id) ?? '', str(ev.tool_name) ?? 'tool', obj(ev.parameters) ?? {}));
          break;
        case 'tool_result':
          out.push(
            tools.result(str(ev.tool_id) ?? '', ev.status === 'success' ? 'completed' : 'failed', {
              output: str(ev.output) ?? '',
              ...(obj(ev.error) ? { error: ev.error } : {}),
            }),
          );
          break;
        case 'error':
          out.push({ type: 'error', data: { message: str(ev.message) ?? 'error', fatal: ev.severity === 'error' } });
          break;
        case 'result': {
          const stats = obj(ev.stats);
          if (stats) {
            out.push({
              type: 'usage',
              data: {
                input_tokens: num(stats.input_tokens) ?? 0,
                output_tokens: num(stats.output_tokens) ?? 0,
                cached_input_tokens: num(stats.cached) ?? 0,
              },
            });
          }
          const failed = ev.status !== 'success';
          out.push({
            type: 'result',
            data: { text: failed ? (str(obj(ev.error)?.message) ?? 'failed') : '', is_error: failed },
          });
          break;
        }
        default:
          break;
      }
      return out;
    },
    end: flush,
  };
}

/** Gemini CLI's headless exit codes (docs/cli/headless.md). */
function readGeminiExit(
  code: number | null,
  signal: NodeJS.Signals | null,
  lastResult: AgentEvent | undefined,
): ExitReading {
  const common = readExitCommon('gemini', code, signal, lastResult);
  switch (code) {
    case 41:
      return {
        kind: 'failed',
        message: `gemini could not authenticate (exit 41): set the run's harness auth secret`,
        errorCode: 'harness_auth_failed',
      };
    case 42:
    case 52:
      return {
        kind: 'error',
        message: `gemini refused its input or configuration (exit ${code})`,
        errorCode: 'harness_config_rejected',
      };
    case 53:
      return { kind: 'failed', message: 'gemini reached its turn limit (exit 53)', errorCode: 'agent_turn_limit' };
    default:
      return common;
  }
}

export const geminiHarness: HarnessAdapter = {
  type: 'gemini',
  liveFollowups: false,
  resumes: true,
  async prepare({ assignment, workspace, bin, prompt }) {
    await writeWorkspaceFile(
      workspace.dir,
      path.relative(workspace.dir, path.join(workspace.home, '.gemini', 'settings.json')),
      `${JSON.stringify(geminiSettings(assignment), null, 2)}\n`,
    );
    if (assignment.basePrompt) await writeWorkspaceFile(workspace.dir, 'GEMINI.md', assignment.basePrompt, 0o644);
    const args = ['--output-format', 'stream-json', '--approval-mode', 'yolo'];
    if (assignment.modelId) args.push('--model', assignment.modelId);
    if (assignment.resumeSessionId) args.push('--resume', assignment.resumeSessionId);
    args.push('--prompt', GEMINI_PROMPT_FLAG_TEXT);
    return {
      command: bin,
      args,
      env: { ...assignment.secretEnv, HOME: workspace.home },
      input: prompt,
      keepStdinOpen: false,
    };
  },
  parser: geminiParser,
  readExit: readGeminiExit,
};
