/**
 * The factory interface as an MCP server (@modelcontextprotocol/sdk), stateless: any process answers any call and
 * nothing is kept between calls. A run token sees every tool; a team API key sees the schema and validate tools,
 * `list_agents`, `dispatch_agent` and `read_skill`. A refusal is a tool result with `isError: true` and a sentence,
 * never a protocol error.
 *
 * One server per kind of caller serves every request, connected once to a transport that carries each POST as an
 * exchange of its own (json-transport.ts): building a server and registering its tools cost about half a
 * millisecond, connecting and closing one per request as much as the rest of the SDK's work. A server holds no
 * caller: each message carries its own (`callerAuthInfo`), so requests of several callers under way at once each
 * answer for their own.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { FactoryCaller, FactoryInterface } from './service.ts';
import { MAX_WAIT_RUNS, MAX_WAIT_SECONDS, ToolRefusal } from './service.ts';
import { JsonRequestTransport } from './json-transport.ts';
import type { JsonExchange } from './json-transport.ts';

export const FACTORY_MCP_SERVER_NAME = 'agentyard-factory';

const SERVER_INSTRUCTIONS =
  'The factory interface of Agentyard: work with the other agents of your factory. dispatch_agent starts a ' +
  'child run of an agent with a brief; send_followup gives a run of your tree more work; wait_for_runs and ' +
  'get_run read their state, result and reports; report answers your parent; ask_user posts a question where ' +
  'your run came from and pauses it (end your turn after it); reply posts there without pausing. read_skill ' +
  '"factory-mcp" explains the whole interface.';

async function answer(work: () => Promise<object> | object): Promise<CallToolResult> {
  try {
    const result = (await work()) as Record<string, unknown>;
    return { content: [{ type: 'text', text: JSON.stringify(result, null, 2) }], structuredContent: result };
  } catch (err) {
    if (err instanceof ToolRefusal) return { isError: true, content: [{ type: 'text', text: err.message }] };
    throw err;
  }
}

const runId = z.string().min(1).max(100).describe('A run id (run_…)');
const FACTORY_ARG = {
  factory: z.string().max(200).optional().describe("The factory's name or id (needed when the team has several)"),
};
// Built once, shared by the servers of both kinds of caller.
const SCHEMAS = {
  dispatch: {
    agent: z.string().min(1).max(200).describe('The agent name, as list_agents answers it'),
    prompt: z.string().min(1).max(100_000).describe('The brief: what to do, with the context it needs'),
    title: z.string().max(200).optional(),
  },
  skill: { skill: z.string().min(1).max(500) },
  schema: { document: z.string().max(200).optional() },
  files: {
    files: z
      .array(z.object({ path: z.string().min(1).max(500), content: z.string().max(262_144) }))
      .min(1)
      .max(500),
  },
  followup: { run_id: runId, message: z.string().min(1).max(100_000) },
  run: { run_id: runId },
  wait: {
    run_ids: z.array(runId).min(1).max(MAX_WAIT_RUNS),
    timeout_seconds: z.number().min(0).max(MAX_WAIT_SECONDS).default(60),
  },
  text: { text: z.string().min(1).max(100_000) },
  post: { text: z.string().min(1).max(40_000) },
  question: { question: z.string().min(1).max(40_000) },
};

/**
 * Where a request's messages carry their caller: the transport hands each message over with this `authInfo`, and
 * every tool reads its caller from the message it answers, never from the server, which serves one request after
 * another.
 */
export function callerAuthInfo(caller: FactoryCaller): AuthInfo {
  return { token: '', clientId: caller.kind, scopes: [], extra: { caller } };
}

function callerIn(extra: { authInfo?: AuthInfo | undefined }): FactoryCaller {
  const caller = extra.authInfo?.extra?.caller as FactoryCaller | undefined;
  if (!caller) throw new Error('a factory interface message without its caller');
  return caller;
}

/** The server for one kind of caller; its tools answer for the caller each message carries. */
function buildServer(iface: FactoryInterface, kind: FactoryCaller['kind'], version: string) {
  const mcp = new McpServer(
    { name: FACTORY_MCP_SERVER_NAME, version },
    { instructions: SERVER_INSTRUCTIONS, capabilities: { tools: {} } },
  );
  const forRuns = kind === 'run';
  // A run works with its own factory; a key names one when its team has several.
  const factoryArg: Record<string, z.ZodOptional<z.ZodString>> = forRuns ? {} : FACTORY_ARG;

  mcp.registerTool(
    'list_agents',
    {
      description: "The agents of the caller's factory: name, description and type (the foreman first among equals).",
      inputSchema: factoryArg,
      annotations: { readOnlyHint: true },
    },
    async (args: { factory?: string | undefined }, extra) =>
      answer(() => iface.listAgents(callerIn(extra), args.factory)),
  );

  mcp.registerTool(
    'dispatch_agent',
    {
      description:
        "Starts a run of an agent of the same factory with the agent's configuration and your brief; from a run, " +
        'it is a child of that run. Answers {run_id}. Refused (with the reason) for an unknown agent or over the ' +
        'limits: tree depth, children per run, active runs of the factory, the tree deadline.',
      inputSchema: { ...SCHEMAS.dispatch, ...factoryArg },
    },
    async (args: { agent: string; prompt: string; title?: string | undefined; factory?: string | undefined }, extra) =>
      answer(() => iface.dispatch(callerIn(extra), args)),
  );

  mcp.registerTool(
    'read_skill',
    {
      description:
        "The text of a skill: one of the factory's (by name, `repo:name` or its path) or a bundled skill by its id " +
        '(factory-files, factory-mcp, agentyard-platform, pr-comments, create-skill, add-mcp-server).',
      inputSchema: SCHEMAS.skill,
      annotations: { readOnlyHint: true },
    },
    async ({ skill }, extra) => answer(() => iface.readSkill(callerIn(extra), skill)),
  );

  mcp.registerTool(
    'get_factory_file_schema',
    {
      description:
        'The JSON Schemas of factory files (draft 2020-12): every document, or one (`factory`, `agent`, `automation`, …).',
      inputSchema: SCHEMAS.schema,
      annotations: { readOnlyHint: true },
    },
    async ({ document }) => answer(() => iface.schema(document)),
  );

  mcp.registerTool(
    'validate_factory_files',
    {
      description:
        "Dry-run validation of factory files, as POST /api/v1/factory-files/validate answers it (with the team's secrets checked).",
      inputSchema: SCHEMAS.files,
      annotations: { readOnlyHint: true },
    },
    async ({ files }, extra) => answer(() => iface.validate(callerIn(extra), files)),
  );

  if (!forRuns) return mcp;

  mcp.registerTool(
    'send_followup',
    {
      description:
        'A follow-up to a run of your tree: the run keeps its conversation and workspace (a finished one continues).',
      inputSchema: SCHEMAS.followup,
    },
    async (args, extra) => answer(() => iface.followup(callerIn(extra), args.run_id, args.message)),
  );

  mcp.registerTool(
    'get_run',
    {
      description:
        'A run of your tree: state, status message, its last result text and artifacts, and the reports it sent you.',
      inputSchema: SCHEMAS.run,
      annotations: { readOnlyHint: true },
    },
    async (args, extra) => answer(() => iface.getRun(callerIn(extra), args.run_id)),
  );

  mcp.registerTool(
    'wait_for_runs',
    {
      description: `Waits until the runs have all ended (SUCCEEDED, FAILED, ERROR, CANCELLED or BLOCKED) or the timeout passes (at most ${MAX_WAIT_SECONDS} s); answers each run as get_run does, and their reports.`,
      inputSchema: SCHEMAS.wait,
      annotations: { readOnlyHint: true },
    },
    async (args, extra) =>
      answer(() => iface.waitForRuns(callerIn(extra), args.run_ids, args.timeout_seconds, extra.signal)),
  );

  mcp.registerTool(
    'report',
    {
      description:
        'From a child run to its parent: delivered to the parent as a follow-up (and in its wait_for_runs/get_run answers).',
      inputSchema: SCHEMAS.text,
    },
    async ({ text }, extra) => answer(() => iface.report(callerIn(extra), text)),
  );

  mcp.registerTool(
    'ask_user',
    {
      description:
        'Posts a question where your run came from (the Slack thread, the GitHub issue or pull request, the Linear ' +
        'issue; the console otherwise) and pauses the run: end your turn after it. The run ends this execution ' +
        'BLOCKED with the question; the answer resumes it as a follow-up.',
      inputSchema: SCHEMAS.question,
    },
    async ({ question }, extra) => answer(() => iface.askUser(callerIn(extra), question)),
  );

  mcp.registerTool(
    'reply',
    {
      description:
        'Posts to where your run came from without pausing (the server posts with the connection’s credentials).',
      inputSchema: SCHEMAS.post,
    },
    async ({ text }, extra) => answer(() => iface.reply(callerIn(extra), text)),
  );

  return mcp;
}

/** The servers of the factory interface, one per kind of caller, each connected to its transport for good. */
export class FactoryMcpServers {
  readonly #servers: Record<FactoryCaller['kind'], { mcp: McpServer; transport: JsonRequestTransport }>;

  private constructor(servers: Record<FactoryCaller['kind'], { mcp: McpServer; transport: JsonRequestTransport }>) {
    this.#servers = servers;
  }

  static async start(iface: FactoryInterface, version: string): Promise<FactoryMcpServers> {
    const connected = async (kind: FactoryCaller['kind']) => {
      const mcp = buildServer(iface, kind, version);
      const transport = new JsonRequestTransport();
      await mcp.connect(transport);
      return { mcp, transport };
    };
    return new FactoryMcpServers({ run: await connected('run'), key: await connected('key') });
  }

  /** Hands a POST's messages to the server of `caller`'s kind, each carrying `caller`. */
  exchange(
    caller: FactoryCaller,
    headers: Readonly<Record<string, string | string[] | undefined>>,
    body: unknown,
  ): JsonExchange {
    return this.#servers[caller.kind].transport.exchange(headers, body, callerAuthInfo(caller));
  }
}
