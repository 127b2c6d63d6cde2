/**
 * The run's MCP servers as tools of the built-in agent, through the MCP client SDK: a server with a command
 * is started over stdio (inside the sandbox, like the agent), a URL is reached over streamable HTTP (or SSE
 * for a URL ending in /sse). Each server tool is offered to the model as `mcp__<server>__<tool>`.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { AgentMcpServer } from './protocol.ts';
import { clipText } from './tools.ts';
import type { ToolOutcome, ToolSpec } from './tools.ts';

/** Longest wait for a server to connect and list its tools. */
const CONNECT_TIMEOUT_MS = 30_000;
/** OpenAI function names: letters, digits, `_` and `-`, at most 64. */
const FUNCTION_NAME = /[^a-zA-Z0-9_-]/g;

export interface McpConnection {
  tools: ToolSpec[];
  close(): Promise<void>;
}

function transportFor(server: AgentMcpServer, cwd: string): Transport {
  if (server.command) {
    return new StdioClientTransport({
      command: server.command,
      args: server.args ?? [],
      // the SDK's safe defaults (HOME, PATH...), never the agent's model key
      env: { ...getDefaultEnvironment(), ...(server.env ?? {}) },
      cwd,
      stderr: 'ignore',
    });
  }
  const url = new URL(server.url!);
  const requestInit = server.headers ? { headers: server.headers } : undefined;
  return /\/sse\/?$/.test(url.pathname)
    ? new SSEClientTransport(url, requestInit ? { requestInit } : {})
    : new StreamableHTTPClientTransport(url, requestInit ? { requestInit } : {});
}

function functionName(server: string, tool: string, taken: Set<string>): string {
  let name = `mcp__${server}__${tool}`.replace(FUNCTION_NAME, '_').slice(0, 64);
  for (let i = 2; taken.has(name); i++) name = `${name.slice(0, 60)}_${i}`;
  taken.add(name);
  return name;
}

/** The text of an MCP tool result's content blocks. */
function resultText(content: unknown): string {
  if (!Array.isArray(content)) return '';
  return content
    .map((block: { type?: string; text?: string; resource?: { text?: string; uri?: string } }) => {
      if (block.type === 'text' && typeof block.text === 'string') return block.text;
      if (block.type === 'resource' && block.resource)
        return block.resource.text ?? `[resource ${block.resource.uri ?? ''}]`;
      return `[${block.type ?? 'content'}]`;
    })
    .join('\n');
}

/**
 * Connects to each server and lists its tools. A server that cannot be reached is reported through `warn` and
 * left out: the run goes on with the others.
 */
export async function connectMcpServers(
  servers: Record<string, AgentMcpServer>,
  cwd: string,
  warn: (message: string) => void,
): Promise<McpConnection> {
  const clients: Client[] = [];
  const tools: ToolSpec[] = [];
  const taken = new Set<string>();
  for (const [serverName, server] of Object.entries(servers)) {
    if (!server.command && !server.url) continue;
    const client = new Client({ name: 'agentyard-agent', version: '1' });
    try {
      await client.connect(transportFor(server, cwd), { timeout: CONNECT_TIMEOUT_MS });
      const listed = await client.listTools(undefined, { timeout: CONNECT_TIMEOUT_MS });
      clients.push(client);
      for (const tool of listed.tools) {
        tools.push({
          name: functionName(serverName, tool.name, taken),
          category: 'integration',
          description: `${tool.description ?? tool.name} (MCP server ${serverName})`.slice(0, 1024),
          parameters: (tool.inputSchema as Record<string, unknown>) ?? { type: 'object' },
          async run(args, ctx): Promise<ToolOutcome> {
            const result = await client.callTool({ name: tool.name, arguments: args }, undefined, {
              signal: ctx.signal,
              timeout: 600_000,
            });
            const text = clipText(resultText(result.content));
            const structured = result.structuredContent;
            return {
              ok: result.isError !== true,
              text: text || (structured ? JSON.stringify(structured) : ''),
              output: {
                server: serverName,
                tool: tool.name,
                content: text,
                ...(structured ? { structured } : {}),
                ...(result.isError === true ? { error: text || 'the tool reported an error' } : {}),
              },
            };
          },
        });
      }
    } catch (err) {
      warn(`MCP server "${serverName}" could not be used: ${err instanceof Error ? err.message : String(err)}`);
      await client.close().catch(() => {});
    }
  }
  return {
    tools,
    async close() {
      await Promise.allSettled(clients.map((c) => c.close()));
    },
  };
}
