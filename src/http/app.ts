import type { Config } from '../config.ts';
import Fastify from 'fastify';
import type { FastifyError } from 'fastify';
import fastifySwagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import FindMyWay from 'find-my-way';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { API_PREFIX } from '../kernel/api.ts';
import { AppError } from '../kernel/errors.ts';
import { traceIdOf } from '../kernel/trace.ts';
import type { KeyAuthenticator } from '../kernel/caller.ts';
import type { Logger } from '../kernel/log.ts';
import type { AppInstance, DirectHandler, DirectRoute, RoutePlugin } from '../plugin.ts';
import { DirectRoutes } from './direct-routes.ts';
import { closeConnectionsPromptly } from './closing.ts';
import { sendProblem, toAppError } from './errors.ts';
import { redactUrl } from '../kernel/redact.ts';
import { RequestLog } from './request-log.ts';
import { MAX_JSON_DEPTH, findStringFault, jsonDeeperThan } from '../kernel/hostile-input.ts';
import { answerClientError } from './client-errors.ts';
import { refuseUnsafeNumbers } from './finite-numbers.ts';

/** The API's own body limit; the webhook ingress sets its own (256 KB) on its routes. */
export const API_BODY_LIMIT = 4 * 1024 * 1024;

export interface BuildAppOptions {
  logger?: boolean | { level: string };
}

/** The RFC 7807 document every error answers with (see `problemFor` and docs/errors.md), for the OpenAPI document. */
const PROBLEM_SCHEMA: { type: 'object'; [member: string]: unknown } = {
  type: 'object',
  required: ['type', 'title', 'status', 'error', 'code', 'detail', 'retryable'],
  properties: {
    type: { type: 'string', format: 'uri' },
    title: { type: 'string' },
    status: { type: 'integer' },
    error: { type: 'string', description: 'The title, or "title (detail)"' },
    code: { type: 'string', description: 'A code of docs/errors.md' },
    detail: { type: 'string' },
    instance: { type: 'string' },
    retryable: { type: 'boolean' },
    trace_id: { type: 'string' },
  },
  additionalProperties: true,
};
const PROBLEM_RESPONSE = {
  description: 'A problem document (docs/errors.md)',
  content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
};

export interface RegisteredRoute {
  method: string;
  /** The route pattern as registered, with the prefix: `/api/v1/agent/runs/:runId`. */
  url: string;
  /** Answers without an API key (root routes, and API routes with `config.public`). */
  public: boolean;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Every route of an app built by `buildApp` (HEAD routes left out), in registration order. */
    readonly routeTable: readonly RegisteredRoute[];
  }
}

/** Every route of an app built by `buildApp` (HEAD routes left out), in registration order. */
export function registeredRoutes(app: AppInstance): readonly RegisteredRoute[] {
  return app.routeTable;
}

/** What the app itself needs: the logger, the request timeout, and the authenticator of API keys. */
export interface AppDeps {
  log: Logger;
  config: Pick<Config, 'bodyTimeoutSeconds'>;
  authenticator: Pick<KeyAuthenticator, 'authenticateFrom'>;
}

function requestValidator(coerceTypes: 'array' | false): Ajv {
  const ajv = new Ajv({
    coerceTypes,
    useDefaults: true,
    removeAdditional: false,
    addUsedSchema: false,
    allErrors: false,
  });
  addFormats.default(ajv);
  return ajv;
}

/** Builds the whole HTTP application; never listens (tests use `inject` or `listen` themselves). */
export async function buildApp(
  deps: AppDeps,
  plugins: readonly RoutePlugin[],
  _options: BuildAppOptions = {},
): Promise<AppInstance> {
  const direct = new DirectRoutes();
  const app = Fastify({
    serverFactory: (handler, serverOptions) => direct.server(handler, serverOptions),
    loggerInstance: deps.log,
    logController: new RequestLog(deps.log),
    genReqId: traceIdOf,
    bodyLimit: API_BODY_LIMIT,
    // Slow senders: the whole request (headers and body) must arrive within this time, or 408 and close.
    requestTimeout: deps.config.bodyTimeoutSeconds * 1000,
    clientErrorHandler: (err, socket) => answerClientError(err, socket, deps.log),
    frameworkErrors: (err, request, reply) => sendProblem(request, reply, toAppError(err)),
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 500 },
    ajv: { customOptions: { coerceTypes: 'array', removeAdditional: false, useDefaults: true, allErrors: false } },
  }).withTypeProvider<TypeBoxTypeProvider>();

  // `close()` ends each connection once its answer is sent, and cuts the rest after a grace (closing.ts).
  const closing = closeConnectionsPromptly(app.server);
  app.addHook('preClose', async () => closing.begin());

  // Query strings, params and headers are text, so their validator coerces ("20" → 20, one value → array);
  // a JSON body is typed already and is not coerced (`{"prompt": 42}` is a 400 naming the field).
  const validators = { coercing: requestValidator('array'), strict: requestValidator(false) };
  // Coerced numbers must be finite and safe integers (`?limit=1e400` is a 400 naming `limit`, never a 500).
  app.setValidatorCompiler(({ schema, httpPart }) =>
    httpPart === 'body' ? validators.strict.compile(schema) : refuseUnsafeNumbers(validators.coercing.compile(schema)),
  );

  // Route patterns by method, to tell a wrong method (405) from an unknown path (404).
  const knownRoutes = FindMyWay();
  const table: RegisteredRoute[] = [];
  app.decorate('routeTable', table);
  app.decorate('addDirectRoute', (prefix: string, routes: readonly DirectRoute[], handler: DirectHandler) => {
    direct.add(prefix, handler);
    for (const route of routes)
      for (const method of route.methods) table.push({ method, url: route.url, public: true });
  });
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      if (method === 'HEAD') continue;
      table.push({
        method,
        url: route.url,
        public: route.config?.public === true || !route.url.startsWith(API_PREFIX),
      });
      try {
        knownRoutes.on(method as 'GET', route.url, () => {});
      } catch {
        // duplicate registration across prefixes; the first is enough
      }
    }
  });

  // Clients send `Content-Type: application/json` with an empty body on bodiless POSTs (the Python SDK
  // does on cancel): that is no body, not invalid JSON.
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') return done(null, undefined);
    if (jsonDeeperThan(text, MAX_JSON_DEPTH)) {
      return done(
        new AppError('json_too_deep', `the body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`),
        undefined,
      );
    }
    try {
      done(null, JSON.parse(text));
    } catch (err) {
      done(new AppError('invalid_json', (err as Error).message), undefined);
    }
  });

  // A declared body over the route's limit is refused before anything else (authentication included), unread;
  // the connection is not reused, as the rest of the body may still be arriving.
  app.addHook('onRequest', async (request) => {
    const limit = request.routeOptions.bodyLimit;
    if (Number(request.headers['content-length']) > limit) {
      throw new AppError('payload_too_large', `the body is larger than ${limit} bytes`, {
        headers: { connection: 'close' },
      });
    }
  });

  // Strings PostgreSQL cannot store (NUL) or that are not Unicode (lone surrogates), anywhere in the input.
  app.addHook('preValidation', async (request) => {
    const fault =
      findStringFault(request.params, 'path') ??
      findStringFault(request.query, 'querystring') ??
      findStringFault(request.body, 'body');
    if (fault) throw new AppError('invalid_string', `${fault.path} ${fault.fault}`);
  });

  app.setErrorHandler((err: FastifyError, request, reply) => {
    const appError = toAppError(err);
    if (appError.status >= 500) request.log.error({ err }, 'request failed');
    return sendProblem(request, reply, appError);
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '/';
    const allowed = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].filter(
      (m) => m !== request.method && knownRoutes.find(m as 'GET', path),
    );
    if (allowed.length > 0) {
      return sendProblem(
        request,
        reply,
        new AppError('method_not_allowed', `${request.method} is not allowed on ${redactUrl(path)}`, {
          headers: { allow: allowed.join(', ') },
        }),
      );
    }
    return sendProblem(request, reply, new AppError('route_not_found', `${request.method} ${redactUrl(path)}`));
  });

  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Agentyard API',
        version: '1.0.0',
        description:
          'Run API (wire-compatible with the official oz-agent-sdk clients), factories, webhooks and secrets.',
      },
      servers: [{ url: API_PREFIX }],
      components: {
        securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer' } },
        schemas: { Problem: PROBLEM_SCHEMA },
      },
      security: [{ bearerAuth: [] }],
    },
    transform: ({ schema, url }) => {
      const transformed = {
        schema: schema ?? {},
        url: url.startsWith(API_PREFIX) ? url.slice(API_PREFIX.length) || '/' : url,
      };
      if (!url.startsWith(API_PREFIX)) transformed.schema = { ...transformed.schema, hide: true };
      // Every operation may answer a problem document (docs/errors.md); declare it once per operation.
      const response = (transformed.schema as { response?: Record<string, unknown> }).response ?? {};
      transformed.schema = {
        ...transformed.schema,
        response: { ...response, '4XX': PROBLEM_RESPONSE, '5XX': PROBLEM_RESPONSE },
      };
      return transformed;
    },
  });

  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));

  await app.register(
    async (api) => {
      api.addHook('onRequest', async (request) => {
        if (request.routeOptions.config.public) return;
        const header = request.headers.authorization;
        const match = header ? /^Bearer\s+(.+)$/i.exec(header) : null;
        if (!match) throw new AppError('authentication_required', 'send the API key as "Authorization: Bearer <key>"');
        const principal = await deps.authenticator.authenticateFrom(match[1]!.trim(), request.ip);
        if (!principal) throw new AppError('authentication_required', 'the API key is invalid, expired or revoked');
        request.principal = principal;
      });
      api.get('/openapi.json', { schema: { hide: true }, config: { public: true } }, async () => app.swagger());
      // Each domain's routes are one Fastify plugin: its hooks and parsers stay inside it.
      for (const plugin of plugins) if (plugin.api) await api.register(plugin.api);
    },
    { prefix: API_PREFIX },
  );

  for (const plugin of plugins) if (plugin.root) await app.register(plugin.root);
  return app;
}
