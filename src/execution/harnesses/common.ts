import type { McpServerConfig } from '../../engine/model.ts';
import type { AgentEvent } from '../assignment.ts';
import type { ExitReading } from './types.ts';

/** One line of JSON output as an object; undefined for anything else (banners, blank lines). */
export function jsonLine(text: string): Record<string, unknown> | undefined {
  const trimmed = text.trim();
  if (!trimmed.startsWith('{')) return undefined;
  try {
    const value: unknown = JSON.parse(trimmed);
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

export const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
export const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
export const obj = (v: unknown): Record<string, unknown> | undefined =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;

/** The conversation's action category of a tool, by its name in the CLIs (ConversationResponse ActionCategory). */
export function toolCategory(name: string): string {
  const n = name.toLowerCase();
  if (n.startsWith('mcp__') || n.includes('mcp')) return 'integration';
  if (n === 'skill' || n.includes('skill')) return 'skill';
  if (/^(bash|shell|run_shell_command|command|exec|local_shell|killshell|bashoutput)$/.test(n) || n.includes('command'))
    return 'command';
  if (
    /^(read|write|edit|multiedit|notebookedit|read_file|write_file|replace|read_many_files|apply_patch|file_change)$/.test(
      n,
    )
  )
    return 'files';
  if (
    /^(grep|glob|ls|list_directory|search_file_content|web_search|google_web_search|websearch|webfetch|web_fetch)$/.test(
      n,
    )
  )
    return 'search';
  if (n.includes('review')) return 'review';
  if (n.includes('computer')) return 'computer';
  return 'command';
}

/**
 * Tool events of a CLI that names a tool only in its call: the result is matched to the call by id and reported
 * under the same name and category.
 */
export function toolEvents(): {
  call(id: string, name: string, input: Record<string, unknown>): AgentEvent;
  result(id: string, status: 'completed' | 'failed', output: Record<string, unknown>): AgentEvent;
} {
  const names = new Map<string, string>();
  return {
    call(id, name, input) {
      names.set(id, name);
      return { type: 'tool_call', data: { id, name, category: toolCategory(name), input } };
    },
    result(id, status, output) {
      const name = names.get(id) ?? 'tool';
      return { type: 'tool_result', data: { id, name, category: toolCategory(name), status, output } };
    },
  };
}

export interface McpSplit {
  /** Servers with a command or a URL. */
  usable: [string, McpServerConfig][];
  /** Servers named by a hosted id (`warp_id`) that this service cannot resolve. */
  unresolved: string[];
}

/** The name of the factory interface among a run's MCP servers (docs/orchestration.md). */
export const FACTORY_MCP_SERVER = 'factory';

/**
 * The run's MCP servers with the factory interface as `factory` (streamable HTTP, the run token in the
 * Authorization header) when the execution has one; it replaces a server of the run under that name.
 */
export function withFactoryServer(assignment: {
  mcpServers: Record<string, McpServerConfig>;
  factoryMcp?: { url: string; token: string } | undefined;
}): Record<string, McpServerConfig> {
  if (!assignment.factoryMcp) return assignment.mcpServers;
  const { [FACTORY_MCP_SERVER]: _replaced, ...others } = assignment.mcpServers;
  return {
    ...others,
    [FACTORY_MCP_SERVER]: {
      url: assignment.factoryMcp.url,
      headers: { Authorization: `Bearer ${assignment.factoryMcp.token}` },
    },
  };
}

export function splitMcpServers(servers: Record<string, McpServerConfig>): McpSplit {
  const usable: [string, McpServerConfig][] = [];
  const unresolved: string[] = [];
  for (const [name, server] of Object.entries(servers)) {
    if (server.command || server.url) usable.push([name, server]);
    else unresolved.push(name);
  }
  return { usable, unresolved };
}

/** A URL ending in /sse speaks the SSE transport; any other the streamable HTTP transport. */
export function isSseUrl(url: string): boolean {
  try {
    return /\/sse\/?$/.test(new URL(url).pathname);
  } catch {
    return false;
  }
}

/** A TOML basic string (JSON's string escapes are a subset of TOML's). */
export function tomlString(value: string): string {
  return JSON.stringify(value);
}

export function tomlInlineTable(map: Record<string, string>): string {
  return `{ ${Object.entries(map)
    .map(([k, v]) => `${tomlString(k)} = ${tomlString(v)}`)
    .join(', ')} }`;
}

/** The usual reading of an exit: 0 is success unless the final result said otherwise. */
export function readExitCommon(
  cli: string,
  code: number | null,
  signal: NodeJS.Signals | null,
  lastResult: AgentEvent | undefined,
): ExitReading {
  const resultText = str(lastResult?.data.text);
  if (signal) return { kind: 'error', message: `${cli} was ended by ${signal}`, errorCode: 'agent_killed' };
  if (code === 0 && lastResult?.data.is_error !== true) {
    return { kind: 'succeeded', message: summary(resultText) ?? `${cli} finished` };
  }
  const reason = summary(resultText) ?? (code === 0 ? 'the agent reported an error' : undefined);
  return {
    kind: 'failed',
    message: `${cli} ${code === 0 ? 'reported a failure' : `exited with code ${code}`}${reason ? `: ${reason}` : ''}`,
    errorCode: 'agent_failed',
  };
}

/** The first 500 characters of a result, for a status message. */
export function summary(text: string | undefined): string | undefined {
  const t = text?.trim();
  if (!t) return undefined;
  return t.length > 500 ? `${t.slice(0, 499)}…` : t;
}

/** The run's `config.max_turns` (a positive integer), when it sets one. */
export function runMaxTurns(config: Record<string, unknown>): number | undefined {
  const n = config.max_turns;
  return typeof n === 'number' && Number.isSafeInteger(n) && n > 0 ? n : undefined;
}
