/**
 * `/api/v1/mcp/factory`: the factory interface over MCP streamable HTTP (stateless, answers in JSON: any process
 * answers any call; `json-transport.ts`), authenticated by a run token (`ayrt_…`, while its execution runs) or a team API key;
 * and `GET /api/v1/agent/skills`, the bundled skills beside the team's factories' own.
 */
import { Type } from 'typebox';
import type { FastifyRequest } from 'fastify';
import { FACTORY_MCP_PATH } from '../kernel/api.ts';
import { AppError } from '../kernel/errors.ts';
import type { Db } from '../kernel/db.ts';
import type { AppInstance } from '../plugin.ts';
import type { Authenticator } from '../identity/service.ts';
import type { FactoryService } from '../factories/service.ts';
import { hashRunToken, isRunToken, verifyRunTokenHash } from '../execution/run-token.ts';
import { DispatchTokenCache } from './token-cache.ts';
import { FactoryMcpServers } from './mcp-server.ts';
import type { FactoryCaller, FactoryInterface } from './service.ts';
import { bundledSkills, factorySkills } from './skills.ts';
import { HostGuard, ownHostnames } from './host-guard.ts';

export interface FactoryInterfaceRouteDeps {
  db: Db;
  authenticator: Pick<Authenticator, 'authenticate'>;
  factories: FactoryService;
  iface: FactoryInterface;
  version: string;
  /** The server's own URLs (AGENTYARD_PUBLIC_URL, the webhook base URL): their host names may address it. */
  ownUrls: () => readonly string[];
  /** More host names that may address it (AGENTYARD_MCP_ALLOWED_HOSTS). */
  allowedHosts: readonly string[];
}

const UNAUTHENTICATED = {
  headers: { 'www-authenticate': 'Bearer realm="agentyard", error="invalid_token"' },
};

async function callerOf(
  deps: FactoryInterfaceRouteDeps,
  request: FastifyRequest,
  tool: string | undefined,
  cache: DispatchTokenCache,
): Promise<FactoryCaller> {
  const header = request.headers.authorization;
  const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  if (!match)
    throw new AppError(
      'authentication_required',
      'send the run token (AGENTYARD_RUN_TOKEN) or an API key as "Authorization: Bearer <token>"',
      UNAUTHENTICATED,
    );
  const token = match[1]!;
  if (isRunToken(token)) {
    const forDispatch = tool === 'dispatch_agent';
    const hashed = token.length <= 200 ? hashRunToken(token) : undefined;
    // a token checked before for a dispatch: the child's insert checks it (token-cache.ts)
    const known = forDispatch && hashed ? cache.caller(hashed) : undefined;
    if (known) return known;
    const holder = hashed ? await verifyRunTokenHash(deps.db, hashed, { forDispatch }) : undefined;
    if (forDispatch && hashed && holder) cache.remember(hashed, holder);
    if (!holder)
      throw new AppError(
        'authentication_required',
        'the run token is unknown, or its execution is no longer running',
        UNAUTHENTICATED,
      );
    return { kind: 'run', ...holder };
  }
  const principal = await deps.authenticator.authenticate(token);
  if (!principal)
    throw new AppError('authentication_required', 'the API key is invalid, expired or revoked', UNAUTHENTICATED);
  return { kind: 'key', principal };
}

/** The tool a single `tools/call` message calls; undefined for anything else. */
function calledTool(body: unknown): string | undefined {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return undefined;
  const message = body as { method?: unknown; params?: { name?: unknown } };
  return message.method === 'tools/call' && typeof message.params?.name === 'string' ? message.params.name : undefined;
}

export async function registerFactoryInterfaceRoutes(app: AppInstance, deps: FactoryInterfaceRouteDeps): Promise<void> {
  const servers = await FactoryMcpServers.start(deps.iface, deps.version);
  const tokens = new DispatchTokenCache();
  // the host names are parsed again only when the server's URLs change (AGENTYARD_PUBLIC_URL may be set late)
  let own: { key: string; guard: HostGuard } | undefined;
  const hostGuard = () => {
    const urls = deps.ownUrls();
    const key = urls.join('\n');
    if (own?.key !== key) own = { key, guard: new HostGuard(ownHostnames(urls, deps.allowedHosts)) };
    return own.guard;
  };
  app.post(
    FACTORY_MCP_PATH,
    {
      config: { public: true },
      schema: {
        tags: ['factory-interface'],
        operationId: 'factoryMcp',
        summary:
          'The factory interface (MCP, streamable HTTP, stateless): a run token or an API key as the bearer (docs/orchestration.md)',
        security: [{ bearerAuth: [] }],
      },
    },
    async (request, reply) => {
      const foreign = hostGuard().reason(request.headers);
      if (foreign) throw new AppError('not_authorized', foreign);
      const caller = await callerOf(deps, request, calledTool(request.body), tokens);
      const exchange = servers.exchange(caller, request.headers, request.body);
      // a client gone mid-call (a long wait_for_runs) aborts the call
      reply.raw.on('close', () => exchange.cancel());
      const answer = await exchange.answer;
      if (caller.kind === 'run' && caller.revoked) {
        // a cached token found dead by the dispatch's own check: refused as it would have been at the door
        if (caller.guard) tokens.forget(caller.guard.tokenHash);
        throw new AppError(
          'authentication_required',
          'the run token is unknown, or its execution is no longer running',
          UNAUTHENTICATED,
        );
      }
      if (!answer) {
        // the client went away before every request was answered: nobody to answer
        reply.hijack();
        if (!reply.raw.writableEnded) reply.raw.destroy();
        return reply;
      }
      reply.code(answer.status);
      if (answer.body === undefined) return reply.send();
      return reply.header('content-type', 'application/json').send(answer.body);
    },
  );

  // No server-initiated stream and no sessions: GET and DELETE are not offered (MCP streamable HTTP allows 405).
  for (const method of ['GET', 'DELETE'] as const) {
    app.route({
      method,
      url: FACTORY_MCP_PATH,
      config: { public: true },
      schema: { hide: true },
      handler: async (_request, reply) =>
        reply
          .code(405)
          .header('allow', 'POST')
          .send({
            jsonrpc: '2.0',
            error: { code: -32000, message: 'Method not allowed: POST JSON-RPC messages' },
            id: null,
          }),
    });
  }

  app.get(
    '/agent/skills',
    {
      schema: {
        tags: ['factory-interface'],
        operationId: 'listAgentSkills',
        summary: "Skills agents can read (read_skill): the bundled ones and the team's factories' own",
        response: {
          200: Type.Object({
            skills: Type.Array(
              Type.Object({
                id: Type.String(),
                name: Type.String(),
                kind: Type.Union([Type.Literal('bundled'), Type.Literal('factory')]),
                description: Type.String(),
                factory: Type.Optional(Type.String()),
                agent: Type.Optional(Type.String()),
                path: Type.Optional(Type.String()),
              }),
            ),
          }),
        },
      },
    },
    async (request) => {
      const skills: {
        id: string;
        name: string;
        kind: 'bundled' | 'factory';
        description: string;
        factory?: string;
        agent?: string;
        path?: string;
      }[] = bundledSkills().map((s) => ({ id: s.id, name: s.id, kind: 'bundled', description: s.description }));
      const { rows } = await deps.factories.list(request.principal.teamId, { limit: 100 });
      for (const factory of rows) {
        if (!factory.definition) continue;
        for (const { skill, agent } of factorySkills(factory.definition)) {
          const description = /^description:\s*(.+)$/m.exec(skill.content)?.[1]?.trim() ?? '';
          skills.push({
            id: `${factory.name}:${skill.path}`,
            name: skill.name,
            kind: 'factory',
            description,
            factory: factory.name,
            ...(agent ? { agent } : {}),
            path: skill.path,
          });
        }
      }
      return { skills };
    },
  );
}
