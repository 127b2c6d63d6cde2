/**
 * The built-in agent (`harness: agentyard`): src/execution/builtin-agent/main.ts run by this Node, inside the
 * run's sandbox like any agent CLI, against an OpenAI-compatible chat-completions endpoint. The run document
 * goes to stdin, follow-ups follow it as JSON lines while the agent runs, and it reports events in Agentyard's
 * own format. The endpoint's key reaches it in its environment only, and every event is redacted of it.
 */
import { access } from 'node:fs/promises';
import path from 'node:path';
import { AGENT_RUN_FORMAT, followupLine } from '../builtin-agent/protocol.ts';
import type { AgentRunDocument } from '../builtin-agent/protocol.ts';
import { readExitCommon, runMaxTurns, splitMcpServers, withFactoryServer } from './common.ts';
import { commandParser } from './command.ts';
import type { HarnessAdapter } from './types.ts';

const AGENT_DIR = path.resolve(import.meta.dirname, '../builtin-agent');
export const AGENT_SCRIPT = path.join(AGENT_DIR, 'main.ts');

/** The instance's endpoint and the agent's limits (AGENTYARD_OPENAI_*, AGENTYARD_AGENT_*). */
export interface BuiltinAgentSettings {
  /** Ends in /v1; undefined: runs on the built-in agent need a `harness.base_url`. */
  baseUrl: string | undefined;
  apiKey: string | undefined;
  /** What `auto` (or no model) is sent as; `auto` when not set. */
  model: string | undefined;
  maxTurns: number;
  deadlineMs: number;
  requestTimeoutMs: number;
}

export const DEFAULT_LIMITS = { maxTurns: 100, deadlineMs: 3_600_000, requestTimeoutMs: 600_000 } as const;

/** The `node_modules` the agent's imports resolve from, found upwards of its directory. */
async function nodeModulesDir(): Promise<string | undefined> {
  for (let dir = AGENT_DIR; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'node_modules');
    try {
      await access(path.join(candidate, 'openai', 'package.json'));
      return candidate;
    } catch {
      if (path.dirname(dir) === dir) return undefined;
    }
  }
}

/** The endpoint a run's configuration names (`harness.base_url`), checked: http(s), no credentials in it. */
export function runBaseUrl(config: Record<string, unknown>): string | undefined {
  const harness = config.harness as { base_url?: unknown } | undefined;
  const raw = harness?.base_url;
  if (typeof raw !== 'string' || raw.trim() === '') return undefined;
  return raw.trim();
}

export function checkBaseUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`the model endpoint "${raw}" is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new Error(`the model endpoint must be http or https, got ${url.protocol}`);
  if (url.username || url.password) throw new Error('the model endpoint must not carry credentials in its URL');
  return raw.replace(/\/+$/, '');
}

export const agentyardHarness: HarnessAdapter = {
  type: 'agentyard',
  liveFollowups: true,
  resumes: true,
  async prepare({ assignment, workspace, bin, prompt, builtin }) {
    const override = runBaseUrl(assignment.run.config);
    const instance = builtin?.baseUrl ? checkBaseUrl(builtin.baseUrl) : undefined;
    const baseUrl = override !== undefined ? checkBaseUrl(override) : instance;
    if (!baseUrl)
      throw new Error('no model endpoint: set AGENTYARD_OPENAI_BASE_URL, or `harness.baseUrl` in the factory');
    // The instance's key goes only to the instance's endpoint: a run naming another endpoint brings its own
    // key (`harness.auth`), or none.
    const key = assignment.secretEnv.AGENTYARD_OPENAI_API_KEY ?? (baseUrl === instance ? builtin?.apiKey : undefined);
    const limits = builtin ?? DEFAULT_LIMITS;
    const doc: AgentRunDocument = {
      format: AGENT_RUN_FORMAT,
      run_id: assignment.runId,
      execution_id: assignment.executionId,
      prompt,
      run_prompt: assignment.runPrompt,
      base_prompt: assignment.basePrompt ?? null,
      model: assignment.modelId ?? builtin?.model ?? 'auto',
      mcp_servers: Object.fromEntries(splitMcpServers(withFactoryServer(assignment)).usable),
      resume_session_id: assignment.resumeSessionId ?? null,
      // the run's own limit may only lower the instance's
      max_turns: Math.min(limits.maxTurns, runMaxTurns(assignment.run.config) ?? limits.maxTurns),
      deadline_at: Date.now() + limits.deadlineMs,
      request_timeout_ms: limits.requestTimeoutMs,
      workspace: workspace.dir,
    };
    const modules = await nodeModulesDir();
    const env: Record<string, string> = { ...assignment.secretEnv, AGENTYARD_OPENAI_BASE_URL: baseUrl };
    delete env.AGENTYARD_OPENAI_API_KEY;
    if (key) env.AGENTYARD_OPENAI_API_KEY = key;
    return {
      command: bin || process.execPath,
      args: [AGENT_SCRIPT],
      env,
      input: `${JSON.stringify(doc)}\n`,
      keepStdinOpen: true,
      readOnly: [AGENT_DIR, ...(modules ? [modules] : [])],
      secrets: key ? [key] : [],
    };
  },
  parser: commandParser,
  followupInput: followupLine,
  isTurnEnd: (event) => event.type === 'result',
  promptsAnswered: (event) => {
    const n = event.data.prompts;
    return typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= 1000 ? n : 1;
  },
  readExit: (code, signal, lastResult) => readExitCommon('the built-in agent', code, signal, lastResult),
};
