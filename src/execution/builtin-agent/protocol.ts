/**
 * What the built-in agent (`harness: agentyard`) reads and writes. The executor starts it inside the run's
 * sandbox; it reads one run document on stdin, then follow-ups as JSON lines, and writes run events as JSON
 * lines on stdout in Agentyard's own event format (the `command` harness's: docs/harnesses.md).
 *
 * This directory is bound read-only into the sandbox on its own: it imports nothing of src/ outside it.
 */

export const AGENT_RUN_FORMAT = 'agentyard.agent/v1';

/** An MCP server as the run configures it (runs/model.ts McpServerConfig, the parts the agent uses). */
export interface AgentMcpServer {
  command?: string;
  args?: string[];
  env?: Record<string, string>;
  url?: string;
  headers?: Record<string, string>;
}

/** The first line on the agent's stdin. */
export interface AgentRunDocument {
  format: typeof AGENT_RUN_FORMAT;
  run_id: string;
  execution_id: string;
  /** What the agent is told in this execution: the run's prompt, or the follow-ups that continue it. */
  prompt: string;
  /** The run's prompt as it was created (for a continuation whose transcript is gone). */
  run_prompt: string;
  base_prompt: string | null;
  /** The model id sent to the endpoint. */
  model: string;
  mcp_servers: Record<string, AgentMcpServer>;
  /** The transcript to continue (a follow-up to a finished run). */
  resume_session_id: string | null;
  /** Model requests this execution may make. */
  max_turns: number;
  /** Epoch milliseconds after which the agent stops and fails. */
  deadline_at: number;
  /** Longest single model request, milliseconds. */
  request_timeout_ms: number;
  workspace: string;
}

/** A line on stdin after the run document. */
export interface AgentFollowupLine {
  type: 'followup';
  message: string;
}

/** The stdin line that hands a follow-up to the running agent. */
export function followupLine(message: string): string {
  const line: AgentFollowupLine = { type: 'followup', message };
  return `${JSON.stringify(line)}\n`;
}

/** Where a session's transcript is kept, relative to the agent's HOME (carried over with the workspace). */
export function transcriptPath(home: string, sessionId: string): string {
  return `${home}/.agentyard-agent/sessions/${sessionId}.jsonl`;
}

export const SESSION_ID = /^[0-9a-f-]{36}$/;
