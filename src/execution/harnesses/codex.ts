/**
 * Codex: `codex exec --json … -` with the prompt on stdin and `$CODEX_HOME/config.toml` (MCP servers,
 * approval and sandbox policy, the base prompt as developer instructions). A follow-up continues the thread
 * with `codex exec --json … resume <thread id> -` in the next execution; codex exec reads no input while it runs.
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
  str,
  tomlInlineTable,
  tomlString,
  withFactoryServer,
} from './common.ts';
import type { HarnessAdapter, OutputParser } from './types.ts';

/** Codex's config.toml: settings, the run's MCP servers and the factory interface. */
export function codexConfigToml(assignment: {
  mcpServers: Parameters<typeof splitMcpServers>[0];
  factoryMcp?: { url: string; token: string } | undefined;
  basePrompt: string | undefined;
  reasoningLevel: string | undefined;
}): string {
  const lines = [
    '# Written by Agentyard for one execution.',
    'approval_policy = "never"',
    'sandbox_mode = "workspace-write"',
  ];
  if (assignment.reasoningLevel) lines.push(`model_reasoning_effort = ${tomlString(assignment.reasoningLevel)}`);
  if (assignment.basePrompt) lines.push(`developer_instructions = ${tomlString(assignment.basePrompt)}`);
  for (const [name, s] of splitMcpServers(withFactoryServer(assignment)).usable) {
    lines.push('', `[mcp_servers.${tomlString(name)}]`);
    if (s.command) {
      lines.push(`command = ${tomlString(s.command)}`);
      if (s.args?.length) lines.push(`args = [${s.args.map(tomlString).join(', ')}]`);
      if (s.env && Object.keys(s.env).length) lines.push(`env = ${tomlInlineTable(s.env)}`);
    } else {
      lines.push(`url = ${tomlString(s.url!)}`);
      if (s.headers && Object.keys(s.headers).length) lines.push(`http_headers = ${tomlInlineTable(s.headers)}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

function codexParser(): OutputParser {
  const started = new Set<string>();
  const toolCall = (item: Record<string, unknown>, id: string): AgentEvent | undefined => {
    switch (item.type) {
      case 'command_execution':
        return {
          type: 'tool_call',
          data: { id, name: 'shell', category: 'command', input: { command: str(item.command) ?? '' } },
        };
      case 'mcp_tool_call': {
        const name = `${str(item.server) ?? 'mcp'}.${str(item.tool) ?? 'tool'}`;
        return { type: 'tool_call', data: { id, name, category: 'integration', input: obj(item.arguments) ?? {} } };
      }
      case 'file_change':
        return {
          type: 'tool_call',
          data: { id, name: 'apply_patch', category: 'files', input: { changes: item.changes ?? [] } },
        };
      case 'web_search':
        return {
          type: 'tool_call',
          data: { id, name: 'web_search', category: 'search', input: { query: str(item.query) ?? '' } },
        };
      default:
        return undefined;
    }
  };
  return {
    line(text) {
      const ev = jsonLine(text);
      if (!ev) return text.trim() ? [{ type: 'log', data: { stream: 'stdout', text } }] : [];
      const out: AgentEvent[] = [];
      switch (ev.type) {
        case 'thread.started':
          if (str(ev.thread_id)) out.push({ type: 'session', data: { session_id: ev.thread_id } });
          break;
        case 'item.started': {
          const item = obj(ev.item);
          const id = str(item?.id) ?? '';
          const call = item && toolCall(item, id);
          if (call) {
            started.add(id);
            out.push(call);
          }
          break;
        }
        case 'item.completed': {
          const item = obj(ev.item);
          if (!item) break;
          const id = str(item.id) ?? '';
          if (item.type === 'agent_message' && str(item.text)) {
            out.push({ type: 'message', data: { role: 'assistant', text: item.text } });
            break;
          }
          if (item.type === 'error') {
            out.push({ type: 'error', data: { message: str(item.message) ?? 'error', fatal: false } });
            break;
          }
          const call = toolCall(item, id);
          if (!call) break;
          if (!started.has(id)) out.push(call);
          const failed = item.status === 'failed' || (num(item.exit_code) !== undefined && item.exit_code !== 0);
          out.push({
            type: 'tool_result',
            data: {
              id,
              name: call.data.name,
              category: call.data.category,
              status: failed ? 'failed' : 'completed',
              output:
                item.type === 'command_execution'
                  ? { output: str(item.aggregated_output) ?? '', exit_code: num(item.exit_code) ?? null }
                  : item.type === 'mcp_tool_call'
                    ? { result: item.result ?? null, error: item.error ?? null }
                    : {},
            },
          });
          break;
        }
        case 'turn.completed': {
          const usage = obj(ev.usage);
          out.push({
            type: 'usage',
            data: {
              input_tokens: num(usage?.input_tokens) ?? 0,
              output_tokens: num(usage?.output_tokens) ?? 0,
              cached_input_tokens: num(usage?.cached_input_tokens) ?? 0,
            },
          });
          out.push({ type: 'result', data: { text: '', is_error: false } });
          break;
        }
        case 'turn.failed': {
          const message = str(obj(ev.error)?.message) ?? 'the turn failed';
          out.push({ type: 'error', data: { message, fatal: true } });
          out.push({ type: 'result', data: { text: message, is_error: true } });
          break;
        }
        case 'error':
          // transient (reconnecting); a fatal error ends the turn with turn.failed
          out.push({ type: 'log', data: { stream: 'stdout', level: 'warn', text: str(ev.message) ?? text } });
          break;
        default:
          break;
      }
      return out;
    },
    end: () => [],
  };
}

export const codexHarness: HarnessAdapter = {
  type: 'codex',
  liveFollowups: false,
  resumes: true,
  async prepare({ assignment, workspace, bin, prompt }) {
    const codexHome = path.join(workspace.home, '.codex');
    await writeWorkspaceFile(
      workspace.dir,
      path.relative(workspace.dir, path.join(codexHome, 'config.toml')),
      codexConfigToml(assignment),
    );
    if (assignment.skill?.resolved) {
      for (const file of assignment.skill.files) {
        await writeWorkspaceFile(
          workspace.dir,
          path.join('.codex', 'skills', assignment.skill.name, file.path),
          file.content,
          0o644,
        );
      }
    }
    const args = ['exec', '--json', '--skip-git-repo-check', '--cd', workspace.dir];
    if (assignment.modelId) args.push('--model', assignment.modelId);
    if (assignment.resumeSessionId) args.push('resume', assignment.resumeSessionId);
    args.push('-');
    return {
      command: bin,
      args,
      env: { ...assignment.secretEnv, CODEX_HOME: codexHome },
      input: prompt,
      keepStdinOpen: false,
    };
  },
  parser: codexParser,
  readExit: (code, signal, lastResult) => readExitCommon('codex', code, signal, lastResult),
};
