import { DEPLOYMENT_NOTES } from './apply/deployment-notes.ts';
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { AppInstance } from '../plugin.ts';
import type { ServiceContext } from '../context.ts';
import { AppError } from '../kernel/errors.ts';
import type { Principal } from '../identity/principal.ts';
import { knownModels } from '../runs/models.ts';
import { isUrlSafe } from '../secrets/provider.ts';
import type { SecretProvider } from '../secrets/provider.ts';
import { ClientRateLimit } from './client-rate-limit.ts';
import { getSchemaBundle, SCHEMA_VERSION } from '../definitions/schemas.ts';
import type { DefinitionPool, PoolContext } from '../definitions/pool.ts';
import { VALIDATE_LIMITS } from '../definitions/validate-request.ts';
import { validateFactoryFiles } from './validation.ts';

/**
 * The factory-file wire endpoints of the product (docs/api.md, "Factory files"), so that its tools work
 * against this server: the published JSON Schemas (for YAML language servers; public, cacheable with ETag)
 * and the dry-run validation its validator script calls.
 */

interface Cached {
  body: string;
  etag: string;
}

const cache = new Map<string, Cached>();

function cached(key: string, make: () => unknown): Cached {
  let entry = cache.get(key);
  if (!entry) {
    const body = JSON.stringify(make());
    entry = { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 32)}"` };
    cache.set(key, entry);
  }
  return entry;
}

/** RFC 9110: `If-None-Match` is `*` or a list of (possibly weak) entity tags, compared weakly. */
export function matchesEtag(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  const bare = etag.replace(/^W\//, '');
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === bare);
}

function sendCacheable(
  request: FastifyRequest,
  reply: FastifyReply,
  entry: Cached,
  contentType = 'application/json',
): FastifyReply {
  reply.header('etag', entry.etag).header('cache-control', 'public, max-age=300').header('vary', 'accept-encoding');
  if (matchesEtag(request.headers['if-none-match'], entry.etag)) return reply.code(304).send();
  return reply.type(`${contentType}; charset=utf-8`).send(entry.body);
}

function documentNames(): string[] {
  return Object.keys(getSchemaBundle()).sort();
}

function checkVersion(version: string): void {
  if (version !== SCHEMA_VERSION) {
    throw new AppError(
      'resource_not_found',
      `schema version "${version}" is not published here; known versions: ${SCHEMA_VERSION}`,
    );
  }
}

/** `factory`, `factory.json` and `factory.schema.json` all name the document `factory.schema.json`. */
export function documentFileName(document: string): string {
  const base = document.replace(/\.schema\.json$/, '').replace(/\.json$/, '');
  return `${base}.schema.json`;
}

const DiagnosticSchema = Type.Object({
  code: Type.String(),
  path: Type.String({ description: 'The file, relative to the factory root' }),
  line: Type.Integer(),
  column: Type.Integer(),
  message: Type.String(),
  severity: Type.Union([Type.Literal('error'), Type.Literal('warning')]),
  json_pointer: Type.String({ description: 'Where in the file (JSON pointer); empty for the whole file' }),
});

const ValidateResponseSchema = Type.Object({
  valid: Type.Boolean(),
  schema_version: Type.String(),
  diagnostics: Type.Array(DiagnosticSchema),
  deferred_resolutions: Type.Array(
    Type.Object({ path: Type.String(), field: Type.String(), kind: Type.String(), json_pointer: Type.String() }),
  ),
  state_dependent_checks_not_run: Type.Array(
    Type.Object({ check: Type.String(), path: Type.String(), json_pointer: Type.String(), subject: Type.String() }),
  ),
  validation_scope: Type.Object({
    parser: Type.String(),
    state_independent: Type.Union([Type.Literal('checked'), Type.Literal('not_run')]),
    state_dependent: Type.Union([Type.Literal('not_checked'), Type.Literal('partially_checked')]),
  }),
});

/** With a team's key, the checks that need the team's secrets run too. */
function teamContext(ctx: FactoryFileRouteDeps, principal: Principal): PoolContext {
  const { secrets } = ctx;
  return {
    secretExists: async (name) => (await secrets.get(principal.teamId, name)) !== undefined,
    secretIsUrlSafe: async (name) => {
      const value = await secrets.get(principal.teamId, name);
      return value !== undefined && isUrlSafe(value);
    },
  };
}

async function optionalPrincipal(ctx: ServiceContext, request: FastifyRequest): Promise<Principal | undefined> {
  const header = request.headers.authorization;
  if (!header) return undefined;
  const match = /^Bearer\s+(.+)$/i.exec(header);
  // A key that was sent but does not work is an error, never silently a narrower validation.
  const principal = match ? await ctx.authenticator.authenticateFrom(match[1]!.trim(), request.ip) : undefined;
  if (!principal)
    throw new AppError(
      'authentication_required',
      'the API key is invalid, expired or revoked (or send no Authorization header)',
    );
  return principal;
}

/** What the factory-file routes are handed: the kernel context and the server's secrets (team checks). */
export interface FactoryFileRouteDeps extends ServiceContext {
  secrets: SecretProvider;
  /** Where dry-run validations run (worker threads with budgets). */
  definitions: DefinitionPool;
}

export async function registerFactoryFileRoutes(app: AppInstance, ctx: FactoryFileRouteDeps): Promise<void> {
  const models = knownModels(ctx.config);
  const tags = ['factory-files'];
  // Validation is the one CPU-bound public route here; the schema routes answer from a cache.
  const validateLimit = new ClientRateLimit('validate', ctx.config.validateRateLimit, 60);

  app.get(
    '/factory-files/schemas',
    {
      config: { public: true },
      schema: {
        tags,
        operationId: 'listFactoryFileSchemas',
        summary: 'The schema registry: the current format version and where its JSON Schemas are',
        security: [],
      },
    },
    async (request, reply) => {
      const base = `${ctx.config.publicUrl}/api/v1/factory-files/schemas`;
      const entry = cached(`registry ${base}`, () => ({
        current_version: SCHEMA_VERSION,
        versions: [
          {
            version: SCHEMA_VERSION,
            url: `${base}/${SCHEMA_VERSION}`,
            documents: documentNames().map((name) => ({ name, url: `${base}/${SCHEMA_VERSION}/${name}` })),
          },
        ],
      }));
      return sendCacheable(request, reply, entry);
    },
  );

  app.get(
    '/factory-files/schemas/:version',
    {
      config: { public: true },
      schema: {
        tags,
        operationId: 'getFactoryFileSchemaBundle',
        summary: 'Every JSON Schema (draft 2020-12) of a format version, keyed by document name',
        params: Type.Object({ version: Type.String() }),
        security: [],
      },
    },
    async (request, reply) => {
      checkVersion(request.params.version);
      const entry = cached(`bundle ${SCHEMA_VERSION}`, () => ({
        schema_version: SCHEMA_VERSION,
        documents: getSchemaBundle(),
      }));
      return sendCacheable(request, reply, entry);
    },
  );

  app.get(
    '/factory-files/schemas/:version/:document',
    {
      config: { public: true },
      schema: {
        tags,
        operationId: 'getFactoryFileSchema',
        summary: 'One JSON Schema (`factory`, `agent.schema.json`, ...); relative $refs resolve beside it',
        params: Type.Object({ version: Type.String(), document: Type.String() }),
        security: [],
      },
    },
    async (request, reply) => {
      checkVersion(request.params.version);
      const name = documentFileName(request.params.document);
      const bundle = getSchemaBundle();
      if (!(name in bundle)) {
        throw new AppError(
          'resource_not_found',
          `no schema document "${request.params.document}"; documents: ${documentNames().join(', ')}`,
        );
      }
      return sendCacheable(
        request,
        reply,
        cached(`doc ${SCHEMA_VERSION} ${name}`, () => bundle[name]),
        'application/schema+json',
      );
    },
  );

  // The body is parsed on a pool worker with the files (a 2 MiB JSON text costs the event loop a copy only);
  // the body schema stays for the OpenAPI document and is checked there.
  await app.register(async (scope) => {
    scope.removeContentTypeParser('application/json');
    scope.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
    scope.post(
      '/factory-files/validate',
      {
        config: { public: true },
        // Before the body is read: a refused request costs no parsing.
        onRequest: async (request) => validateLimit.consume(request.ip),
        validatorCompiler: () => () => true,
        schema: {
          tags,
          operationId: 'validateFactoryFiles',
          summary:
            'Dry-run validation of factory files (no API key needed; with one, checks that need the team secrets run too). ' +
            `At most ${VALIDATE_LIMITS.files} files, 256 KiB each, 2 MiB in all; ` +
            'requests per minute from one client are limited (AGENTYARD_VALIDATE_RATE_LIMIT, 429 rate_limited with Retry-After).',
          security: [{}, { bearerAuth: [] }],
          body: Type.Object({
            files: Type.Array(Type.Object({ path: Type.String(), content: Type.String() }), {
              description: 'factory.yaml and resource files',
            }),
          }),
          response: { 200: ValidateResponseSchema },
        },
      },
      async (request) => {
        const principal = await optionalPrincipal(ctx, request);
        const raw = request.body as unknown;
        if (!Buffer.isBuffer(raw)) throw new AppError('invalid_request', "body must have required property 'files'");
        return validateFactoryFiles(ctx.definitions, raw, {
          ...(principal ? teamContext(ctx, principal) : {}),
          models,
          deploymentNotes: DEPLOYMENT_NOTES,
          teamChecked: principal !== undefined,
        });
      },
    );
  });
}
