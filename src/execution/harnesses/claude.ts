/**
 * Claude Code: `claude -p --input-format stream-json --output-format stream-json --verbose`. The prompt and
 * every follow-up go to stdin as stream-json user messages (a follow-up is taken at the agent's next turn);
 * stdin closes after a turn's `result` when no follow-up waits, and the CLI exits.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { AgentEvent } from '../assignment.ts';
import { writeWorkspaceFile } from '../workspace.ts';
import { fileExistsInside, listInside, makeDirectoryInside, readFileInside, writeFileInside } from '../workspace-fs.ts';
import {
  jsonLine,
  num,
  obj,
  readExitCommon,
  runMaxTurns,
  splitMcpServers,
  isSseUrl,
  str,
  toolEvents,
  withFactoryServer,
} from './common.ts';
import type { HarnessAdapter, OutputParser } from './types.ts';

/** Longest base prompt passed as an argument; longer ones go to CLAUDE.md (Linux limits one argument to 128 KiB). */
const MAX_ARG_PROMPT = 64 * 1024;

export function claudeUserMessage(text: string): string {
  return `${JSON.stringify({ type: 'user', message: { role: 'user', content: [{ type: 'text', text }] } })}\n`;
}

/** Claude Code keeps a session under `<config>/projects/<cwd with every non-alphanumeric character as ->/`. */
export function claudeProjectDir(configDir: string, cwd: string): string {
  return path.join(configDir, 'projects', cwd.replace(/[^a-zA-Z0-9]/g, '-'));
}

/**
 * A session recorded in another working directory (the previous workspace) is copied where a resume looks.
 * The agent's home is the agent's: read and written without following a link (workspace-fs.ts).
 */
async function placeSessionForResume(home: string, cwd: string, sessionId: string): Promise<void> {
  const configDir = path.join(home, '.claude');
  const projects = path.relative(home, path.join(configDir, 'projects'));
  const target = path.relative(home, claudeProjectDir(configDir, cwd));
  const file = `${sessionId}.jsonl`;
  if (!/^[A-Za-z0-9._-]+$/.test(sessionId) || fileExistsInside(home, path.join(target, file))) return;
  for (const project of listInside(home, projects)) {
    const source = path.join(projects, project, file);
    if (!fileExistsInside(home, source)) continue;
    await writeFileInside(home, path.join(target, file), readFileInside(home, source));
    return;
  }
}

function claudeParser(): OutputParser {
  const tools = toolEvents();
  return {
    line(text) {
      const ev = jsonLine(text);
      if (!ev) return text.trim() ? [{ type: 'log', data: { stream: 'stdout', text } }] : [];
      const out: AgentEvent[] = [];
      const sessionId = str(ev.session_id);
      switch (ev.type) {
        case 'system':
          if (ev.subtype === 'init' && sessionId) {
            out.push({
              type: 'session',
              data: {
                session_id: sessionId,
                ...(str(ev.model) ? { model: ev.model } : {}),
                ...(Array.isArray(ev.mcp_servers) ? { mcp_servers: ev.mcp_servers } : {}),
              },
            });
          }
          break;
        case 'assistant':
        case 'user': {
          const message = obj(ev.message);
          const content = message?.content;
          if (typeof content === 'string' && ev.type === 'assistant')
            out.push({ type: 'message', data: { role: 'assistant', text: content } });
          if (!Array.isArray(content)) break;
          for (const block of content.map(obj)) {
            if (!block) continue;
            if (block.type === 'text' && ev.type === 'assistant' && str(block.text)) {
              out.push({ type: 'message', data: { role: 'assistant', text: block.text } });
            } else if (block.type === 'tool_use') {
              out.push(tools.call(str(block.id) ?? '', str(block.name) ?? 'tool', obj(block.input) ?? {}));
            } else if (block.type === 'tool_result') {
              out.push(
                tools.result(str(block.tool_use_id) ?? '', block.is_error === true ? 'failed' : 'completed', {
                  content: block.content ?? null,
                }),
              );
            }
          }
          break;
        }
        case 'result': {
          const usage = obj(ev.usage);
          if (usage || num(ev.total_cost_usd) !== undefined) {
            out.push({
              type: 'usage',
              data: {
                input_tokens: num(usage?.input_tokens) ?? 0,
                output_tokens: num(usage?.output_tokens) ?? 0,
                cached_input_tokens:
                  (num(usage?.cache_read_input_tokens) ?? 0) + (num(usage?.cache_creation_input_tokens) ?? 0),
                ...(num(ev.total_cost_usd) !== undefined ? { cost_usd: ev.total_cost_usd } : {}),
              },
            });
          }
          out.push({
            type: 'result',
            data: {
              text: str(ev.result) ?? '',
              is_error: ev.is_error === true || (str(ev.subtype) ?? 'success') !== 'success',
              subtype: str(ev.subtype) ?? 'success',
              ...(num(ev.num_turns) !== undefined ? { num_turns: ev.num_turns } : {}),
              ...(num(ev.duration_ms) !== undefined ? { duration_ms: ev.duration_ms } : {}),
              ...(sessionId ? { session_id: sessionId } : {}),
            },
          });
          break;
        }
        default:
          break;
      }
      return out;
    },
    end: () => [],
  };
}

/** Claude Code's `.mcp.json`: the run's MCP servers and the factory interface. */
export function claudeMcpConfig(assignment: Parameters<typeof withFactoryServer>[0]): Record<string, unknown> {
  const { usable } = splitMcpServers(withFactoryServer(assignment));
  const mcpServers = Object.fromEntries(
    usable.map(([name, s]) => [
      name,
      s.command
        ? { type: 'stdio', command: s.command, args: s.args ?? [], env: s.env ?? {} }
        : { type: isSseUrl(s.url!) ? 'sse' : 'http', url: s.url, ...(s.headers ? { headers: s.headers } : {}) },
    ]),
  );
  return { mcpServers };
}

export const claudeHarness: HarnessAdapter = {
  type: 'claude',
  liveFollowups: true,
  resumes: true,
  async prepare({ assignment, workspace, bin, prompt }) {
    const configDir = makeDirectoryInside(workspace.home, '.claude');
    // the server's own file, outside the workspace (bound read-only into the sandbox)
    const mcpConfig = path.join(workspace.configDir, 'claude-mcp.json');
    await writeFile(mcpConfig, `${JSON.stringify(claudeMcpConfig(assignment), null, 2)}\n`, { mode: 0o600 });
    if (assignment.skill?.resolved) {
      for (const file of assignment.skill.files) {
        await writeWorkspaceFile(
          workspace.dir,
          path.join('.claude', 'skills', assignment.skill.name, file.path),
          file.content,
          0o644,
        );
      }
    }
    const args = [
      '-p',
      '--input-format',
      'stream-json',
      '--output-format',
      'stream-json',
      '--verbose',
      '--permission-mode',
      'bypassPermissions',
      '--mcp-config',
      mcpConfig,
      '--strict-mcp-config',
    ];
    if (assignment.modelId) args.push('--model', assignment.modelId);
    const maxTurns = runMaxTurns(assignment.run.config);
    if (maxTurns) args.push('--max-turns', String(maxTurns));
    if (assignment.basePrompt) {
      if (assignment.basePrompt.length <= MAX_ARG_PROMPT) args.push('--append-system-prompt', assignment.basePrompt);
      else await writeWorkspaceFile(workspace.dir, 'CLAUDE.md', assignment.basePrompt, 0o644);
    }
    if (assignment.resumeSessionId) {
      await placeSessionForResume(workspace.home, workspace.dir, assignment.resumeSessionId);
      args.push('--resume', assignment.resumeSessionId);
    }
    return {
      command: bin,
      args,
      env: {
        ...assignment.secretEnv,
        CLAUDE_CONFIG_DIR: configDir,
        DISABLE_AUTOUPDATER: '1',
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      },
      input: claudeUserMessage(prompt),
      keepStdinOpen: true,
    };
  },
  parser: claudeParser,
  followupInput: claudeUserMessage,
  isTurnEnd: (event) => event.type === 'result',
  readExit: (code, signal, lastResult) => readExitCommon('claude', code, signal, lastResult),
};
