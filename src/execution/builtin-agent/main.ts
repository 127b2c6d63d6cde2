/**
 * The built-in agent's process (`harness: agentyard`), started by the executor inside the run's sandbox:
 *   node main.ts   < run document, then follow-ups (JSON lines)   > run events (JSON lines)
 * The endpoint comes from AGENTYARD_OPENAI_BASE_URL and AGENTYARD_OPENAI_API_KEY; the key is taken out of the
 * environment at once, so no command the agent runs inherits it. Exit 0: the agent answered; 1: it failed
 * (max turns, deadline, the endpoint); 143: it was stopped (SIGTERM).
 */
import { appendFile, mkdir, readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { AgentLoop, AgentStop } from './loop.ts';
import type { Emit, FollowupSource, TranscriptStore } from './loop.ts';
import { AGENT_RUN_FORMAT, SESSION_ID, transcriptPath } from './protocol.ts';
import type { AgentMcpServer, AgentRunDocument } from './protocol.ts';
import { BUILT_IN_TOOLS } from './tools.ts';

const KEY_VAR = 'AGENTYARD_OPENAI_API_KEY';

function emitter(secrets: string[]): Emit {
  return (event) => {
    let line = JSON.stringify(event);
    for (const s of secrets) if (s.length >= 6) line = line.split(s).join('[REDACTED]');
    process.stdout.write(`${line}\n`);
  };
}

/** stdin: the run document first, then follow-ups until EOF. */
function stdinLines(): { first: Promise<string | undefined>; followups: FollowupSource } {
  const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
  const queue: string[] = [];
  let ended = false;
  let waiter: (() => void) | undefined;
  let resolveFirst: (line: string | undefined) => void = () => {};
  const first = new Promise<string | undefined>((resolve) => (resolveFirst = resolve));
  let gotFirst = false;
  rl.on('line', (line) => {
    if (!gotFirst) {
      gotFirst = true;
      resolveFirst(line);
      return;
    }
    try {
      const msg = JSON.parse(line) as { type?: unknown; message?: unknown };
      if (msg.type === 'followup' && typeof msg.message === 'string' && msg.message.trim()) queue.push(msg.message);
    } catch {
      // not a follow-up line
    }
    waiter?.();
  });
  rl.on('close', () => {
    ended = true;
    if (!gotFirst) resolveFirst(undefined);
    waiter?.();
  });
  return {
    first,
    followups: {
      take: () => queue.splice(0),
      async next(signal) {
        while (queue.length === 0 && !ended && !signal.aborted)
          await new Promise<void>((resolve) => {
            waiter = resolve;
            signal.addEventListener('abort', () => resolve(), { once: true });
          });
        waiter = undefined;
        if (signal.aborted)
          throw signal.reason instanceof AgentStop ? signal.reason : new AgentStop('cancelled', 'stopped');
        return queue.shift();
      },
    },
  };
}

/** JSON lines, one message each: a save appends, so a turn costs what it adds, not the whole conversation. */
function transcripts(home: string): TranscriptStore {
  return {
    async load(sessionId) {
      if (!SESSION_ID.test(sessionId)) return undefined;
      let text: string;
      try {
        text = await readFile(transcriptPath(home, sessionId), 'utf8');
      } catch {
        return undefined;
      }
      const messages: ChatCompletionMessageParam[] = [];
      for (const line of text.split('\n')) {
        if (!line) continue;
        try {
          const m = JSON.parse(line) as ChatCompletionMessageParam;
          if (m && typeof m === 'object' && typeof m.role === 'string') messages.push(m);
        } catch {
          // a line cut short by a crash: the conversation ends before it
          break;
        }
      }
      return messages;
    },
    async append(sessionId, messages) {
      const file = transcriptPath(home, sessionId);
      await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
      await appendFile(file, messages.map((m) => `${JSON.stringify(m)}\n`).join(''), { mode: 0o600 });
    },
  };
}

function checkDocument(value: unknown): AgentRunDocument {
  const doc = value as Partial<AgentRunDocument> | null;
  if (!doc || typeof doc !== 'object' || doc.format !== AGENT_RUN_FORMAT)
    throw new Error(`stdin must start with a ${AGENT_RUN_FORMAT} document`);
  for (const key of ['prompt', 'model', 'workspace'] as const)
    if (typeof doc[key] !== 'string') throw new Error(`the run document has no ${key}`);
  return doc as AgentRunDocument;
}

/** The factory interface, when the executor passes it in the environment (AGENTYARD_MCP_URL). */
function factoryServer(env: NodeJS.ProcessEnv): Record<string, AgentMcpServer> {
  const url = env.AGENTYARD_MCP_URL;
  if (!url) return {};
  const token = env.AGENTYARD_RUN_TOKEN;
  return { factory: { url, ...(token ? { headers: { authorization: `Bearer ${token}` } } : {}) } };
}

async function main(): Promise<number> {
  const apiKey = process.env[KEY_VAR] ?? '';
  delete process.env[KEY_VAR];
  const baseURL = process.env.AGENTYARD_OPENAI_BASE_URL;
  delete process.env.AGENTYARD_OPENAI_BASE_URL;
  const emit = emitter([apiKey]);
  const fail = (subtype: string, message: string): number => {
    emit({ type: 'error', message, fatal: true });
    emit({ type: 'result', text: message, is_error: true, subtype });
    return 1;
  };

  const stop = new AbortController();
  process.once('SIGTERM', () => stop.abort(new AgentStop('cancelled', 'the agent was stopped')));
  process.once('SIGINT', () => stop.abort(new AgentStop('cancelled', 'the agent was stopped')));

  const input = stdinLines();
  const firstLine = await input.first;
  let doc: AgentRunDocument;
  try {
    doc = checkDocument(firstLine === undefined ? undefined : JSON.parse(firstLine));
  } catch (err) {
    return fail('error_input', (err as Error).message);
  }
  if (!baseURL) return fail('error_config', 'no model endpoint: AGENTYARD_OPENAI_BASE_URL is not set');

  const deadlineMs = Math.max(0, doc.deadline_at - Date.now());
  const deadline = setTimeout(
    () =>
      stop.abort(
        new AgentStop('error_deadline', `the agent ran past its deadline (${new Date(doc.deadline_at).toISOString()})`),
      ),
    deadlineMs,
  );
  deadline.unref();

  const client = new OpenAI({
    baseURL,
    // an endpoint without keys (a local server) still gets a header the client insists on
    apiKey: apiKey || 'none',
    maxRetries: 2,
    timeout: doc.request_timeout_ms,
  });
  const toolEnv: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== 'AGENTYARD_RUN_TOKEN') toolEnv[k] = v;

  // the MCP client SDK is loaded only for a run that has servers (it is most of the agent's start-up time)
  const servers = { ...doc.mcp_servers, ...factoryServer(process.env) };
  const mcp = Object.keys(servers).length
    ? await (await import('./mcp.ts')).connectMcpServers(servers, doc.workspace, (message) =>
        emit({ type: 'status', message }),
      )
    : { tools: [], close: async () => {} };
  const loop = new AgentLoop({
    client,
    doc,
    tools: [...BUILT_IN_TOOLS, ...mcp.tools],
    toolEnv,
    emit,
    transcripts: transcripts(process.env.HOME || homedir()),
    followups: input.followups,
    signal: stop.signal,
  });
  try {
    await loop.run();
    return 0;
  } catch (err) {
    if (err instanceof AgentStop) {
      if (err.subtype === 'cancelled') return 143;
      return fail(err.subtype, err.message);
    }
    return fail('error_agent', `the agent failed: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    clearTimeout(deadline);
    await Promise.race([mcp.close(), new Promise((r) => setTimeout(r, 1000).unref())]);
  }
}

main().then(
  (code) => {
    process.exitCode = code;
    // stdin may still be open (the executor closes it): leave without waiting for it
    process.stdout.write('', () => process.exit(code));
  },
  (err: unknown) => {
    process.stderr.write(`agentyard agent: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
