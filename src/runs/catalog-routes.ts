import { Type } from 'typebox';
import type { AppInstance } from '../plugin.ts';
import type { ServiceContext } from '../context.ts';
import { AppError } from '../kernel/errors.ts';
import { ARTIFACT_URL_KEY_PURPOSE, checkDownloadSignature, signedDownloadUrl } from './artifact-files.ts';
import { knownModels } from './models.ts';
import { environmentsOfFactories, environmentUid } from './environments.ts';
import * as sql from './sql.ts';
import type { FactoryAgentsRow } from './sql.ts';

/**
 * The read-only reference endpoints the official clients may call besides runs: agents (from the applied
 * factories), models (configured), environments (none yet), artifacts, and the two public redirect checks.
 * They exist so that no client call ends in a 404 for a route this server does not know.
 */

const Str = Type.String();
const OptStr = Type.Optional(Type.String());

const AgentListVariantSchema = Type.Object({
  id: Str,
  description: Str,
  base_prompt: Str,
  source: Type.Object({ owner: Str, name: Str, skill_path: Str, worker_host: OptStr }),
  environments: Type.Array(Type.Object({ uid: Str, name: Str })),
  last_run_timestamp: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  factory_uid: OptStr,
});
const AgentListItemSchema = Type.Object({ name: Str, variants: Type.Array(AgentListVariantSchema) });

const ModelInfoSchema = Type.Object(
  {
    id: Str,
    display_name: Str,
    provider: Type.Union([
      Type.Literal('OPENAI'),
      Type.Literal('ANTHROPIC'),
      Type.Literal('GOOGLE'),
      Type.Literal('UNKNOWN'),
    ]),
    vision_supported: Type.Boolean(),
    description: OptStr,
    reasoning_level: OptStr,
  },
  { additionalProperties: true },
);

type AgentVariant = {
  id: string;
  description: string;
  base_prompt: string;
  source: { owner: string; name: string; skill_path: string; worker_host?: string };
  environments: { uid: string; name: string }[];
  last_run_timestamp: string | null;
  factory_uid: string;
  /** owner/repo values a `repo=` filter selects this variant by (not served). */
  repos: string[];
};

/**
 * `owner/repo` of a factory's git source when it is hosted (`https://host/owner/repo`, `git@host:owner/repo`);
 * otherwise (a local path, a directory, a managed factory) `factory/<factory name>`.
 */
export function factoryRepo(row: Pick<FactoryAgentsRow, 'name' | 'source'>): { owner: string; name: string } {
  const url = typeof row.source.url === 'string' ? row.source.url : '';
  const match =
    /^(?:https?|ssh|git):\/\/[^/]+\/(?:.*\/)?([^/]+)\/([^/]+?)(?:\.git)?\/?$/.exec(url) ??
    /^[\w.-]+@[^:/]+:(?:.*\/)?([^/]+)\/([^/]+?)(?:\.git)?\/?$/.exec(url);
  return match ? { owner: match[1]!, name: match[2]! } : { owner: 'factory', name: row.name };
}

/** The repositories a factory's agents belong to: its source's, and those its factory.yaml declares. */
export function factoryRepos(row: Pick<FactoryAgentsRow, 'name' | 'source' | 'definition'>): Set<string> {
  const source = factoryRepo(row);
  const declared = ((row.definition as { factory?: { repositories?: { owner?: unknown; name?: unknown }[] } } | null)
    ?.factory?.repositories ?? []) as { owner?: unknown; name?: unknown }[];
  return new Set([
    `${source.owner}/${source.name}`,
    ...declared.flatMap((r) =>
      typeof r.owner === 'string' && typeof r.name === 'string' ? [`${r.owner}/${r.name}`] : [],
    ),
  ]);
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

/** The agents of each applied factory definition, grouped by name (a name in two factories: two variants). */
export function agentsOfFactories(rows: FactoryAgentsRow[]): Map<string, AgentVariant[]> {
  const byName = new Map<string, AgentVariant[]>();
  for (const row of rows) {
    const repo = factoryRepo(row);
    const repos = [...factoryRepos(row)];
    for (const raw of row.definition?.agents ?? []) {
      const agent = raw as Record<string, unknown>;
      const name = text(agent.name);
      if (!name) continue;
      const execution = (agent.execution ?? {}) as Record<string, unknown>;
      const skillPath = text(agent.file) || `agents/${name}/agent.md`;
      const workerHost = text(execution.workerHost);
      const variant: AgentVariant = {
        id: `${repo.owner}/${repo.name}:${skillPath}`,
        description: text(agent.description),
        base_prompt: text(agent.prompt),
        source: {
          owner: repo.owner,
          name: repo.name,
          skill_path: skillPath,
          ...(workerHost ? { worker_host: workerHost } : {}),
        },
        // The runner the agent executes on, as an environment (GET /agent/environments).
        environments: text(execution.runner)
          ? [{ uid: environmentUid(row.id, text(execution.runner)), name: text(execution.runner) }]
          : [],
        last_run_timestamp: null,
        factory_uid: row.id,
        repos,
      };
      byName.set(name, [...(byName.get(name) ?? []), variant]);
    }
  }
  return byName;
}

export async function registerCatalogRoutes(app: AppInstance, ctx: ServiceContext): Promise<void> {
  const { closed: _closed, ids: _ids, verdicts: _verdicts, ...models } = knownModels(ctx.config);
  const downloadKey = ctx.cipher.deriveKey(ARTIFACT_URL_KEY_PURPOSE);

  app.get(
    '/agent',
    {
      schema: {
        tags: ['agents'],
        operationId: 'listAgents',
        summary: "List the agents of the team's applied factories",
        querystring: Type.Object(
          {
            repo: Type.Optional(Type.String({ description: 'owner/repo' })),
            refresh: Type.Optional(Type.Boolean()),
            sort_by: Type.Optional(Type.Union([Type.Literal('name'), Type.Literal('last_run')])),
            include_malformed_skills: Type.Optional(Type.Boolean()),
          },
          { additionalProperties: true },
        ),
        response: { 200: Type.Object({ agents: Type.Array(AgentListItemSchema) }) },
      },
    },
    async (request) => {
      const { repo, sort_by: sortBy = 'name' } = request.query;
      if (repo !== undefined && !/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/.test(repo)) {
        throw new AppError('invalid_request', `repo must look like "owner/repo", got "${repo}"`);
      }
      const teamId = request.principal.teamId;
      const byName = agentsOfFactories(await sql.listFactoryDefinitions(ctx.db, teamId));
      const lastRuns = await sql.lastRunByConfigName(ctx.db, teamId, [...byName.keys()]);
      const agents = [...byName.entries()]
        .map(([name, variants]) => ({
          name,
          variants: variants
            .filter((v) => repo === undefined || v.repos.includes(repo))
            .map(({ repos: _repos, ...v }) => ({
              ...v,
              last_run_timestamp: lastRuns.get(name)?.toISOString() ?? null,
            })),
        }))
        .filter((a) => a.variants.length > 0);
      const lastRun = (a: { name: string }) => lastRuns.get(a.name)?.getTime() ?? 0;
      agents.sort((a, b) => (sortBy === 'last_run' ? lastRun(b) - lastRun(a) : 0) || a.name.localeCompare(b.name));
      return { agents };
    },
  );

  app.get(
    '/agent/models',
    {
      schema: {
        tags: ['agents'],
        operationId: 'listModels',
        summary:
          'The model catalogue: AGENTYARD_MODELS first, then the built-in ids (closed with AGENTYARD_MODEL_CATALOGUE)',
        response: { 200: Type.Object({ default_model_id: Str, models: Type.Array(ModelInfoSchema) }) },
      },
    },
    async () => models,
  );

  app.get(
    '/agent/environments',
    {
      schema: {
        tags: ['agents'],
        operationId: 'listEnvironments',
        summary: "The runners of the team's applied factories, as environments (uid `<factory id>.<runner name>`)",
        querystring: Type.Object(
          { sort_by: Type.Optional(Type.Union([Type.Literal('name'), Type.Literal('last_updated')])) },
          { additionalProperties: true },
        ),
        response: {
          200: Type.Object({ environments: Type.Array(Type.Object({ uid: Str }, { additionalProperties: true })) }),
        },
      },
    },
    async (request) => {
      const teamId = request.principal.teamId;
      const factories = await sql.listFactoryDefinitions(ctx.db, teamId);
      const environments = environmentsOfFactories(factories, teamId);
      const lastRuns = await sql.lastRunsByRunner(
        ctx.db,
        teamId,
        factories.map((f) => f.id),
      );
      const byUid = new Map(lastRuns.map((r) => [environmentUid(r.factory_id, r.runner), r]));
      for (const env of environments) {
        const last = byUid.get(env.uid);
        if (!last) continue;
        env.setup_failed = last.setup_failed;
        env.last_task_run_timestamp = last.started_at?.toISOString() ?? null;
        env.last_task_created = {
          id: last.id,
          title: last.title,
          state: last.state,
          created_at: last.created_at.toISOString(),
          updated_at: last.updated_at.toISOString(),
          started_at: last.started_at?.toISOString() ?? null,
        };
      }
      const sortBy = request.query.sort_by ?? 'last_updated';
      environments.sort((a, b) =>
        sortBy === 'name'
          ? a.config.name.localeCompare(b.config.name) || a.uid.localeCompare(b.uid)
          : b.last_updated.localeCompare(a.last_updated) || a.uid.localeCompare(b.uid),
      );
      return { environments };
    },
  );

  app.get(
    '/agent/artifacts/:artifactUid',
    {
      schema: {
        tags: ['runs'],
        operationId: 'getArtifact',
        summary: "An artifact of one of the team's runs (PLAN, SCREENSHOT, FILE)",
        params: Type.Object({ artifactUid: Type.String({ minLength: 1 }) }),
        response: {
          200: Type.Object(
            {
              artifact_uid: Str,
              artifact_type: Str,
              created_at: Type.String({ format: 'date-time' }),
              run_id: Str,
              data: Type.Unknown(),
            },
            { additionalProperties: true },
          ),
        },
      },
    },
    async (request) => {
      const uid = request.params.artifactUid;
      const found = await sql.findArtifact(ctx.db, request.principal.teamId, uid);
      const type = found?.artifact.artifact_type;
      if (!found || (type !== 'PLAN' && type !== 'FILE' && type !== 'SCREENSHOT')) {
        throw new AppError(
          'resource_not_found',
          `artifact ${uid} does not exist (pull requests are read from the run)`,
        );
      }
      const data = found.artifact.data ?? {};
      const base = {
        artifact_uid: uid,
        artifact_type: type,
        created_at: found.artifact.created_at ?? new Date(0).toISOString(),
        run_id: found.run_id,
      };
      if (type === 'PLAN') {
        const { content, ...plan } = data;
        return {
          ...base,
          data: {
            ...plan,
            document_uid: typeof plan.document_uid === 'string' ? plan.document_uid : uid,
            notebook_uid: typeof plan.notebook_uid === 'string' ? plan.notebook_uid : found.run_id,
            content: typeof content === 'string' ? content : '',
            content_type: 'text/markdown',
          },
        };
      }
      const { artifact_uid: _uid, mime_type: mimeType, ...file } = data;
      const signed = signedDownloadUrl(`${ctx.config.publicUrl}/api/v1`, downloadKey, uid);
      return {
        ...base,
        data: {
          ...(type === 'FILE'
            ? file
            : { ...(typeof file.description === 'string' ? { description: file.description } : {}) }),
          download_url: signed.url,
          expires_at: signed.expiresAt.toISOString(),
          content_type: typeof mimeType === 'string' ? mimeType : 'application/octet-stream',
        },
      };
    },
  );

  app.get(
    '/agent/artifacts/:artifactUid/download',
    {
      config: { public: true },
      schema: {
        tags: ['runs'],
        operationId: 'downloadArtifact',
        summary:
          "Download a FILE or SCREENSHOT artifact by its download_url (no API key: the URL's signature is the credential)",
        params: Type.Object({ artifactUid: Type.String({ minLength: 1 }) }),
        querystring: Type.Object({ expires: OptStr, signature: OptStr }, { additionalProperties: true }),
        security: [],
      },
    },
    async (request, reply) => {
      const uid = request.params.artifactUid;
      checkDownloadSignature(downloadKey, uid, request.query.expires, request.query.signature);
      const file = await sql.getArtifactFile(ctx.db, uid);
      if (!file) throw new AppError('resource_not_found', `artifact ${uid} has no stored content`);
      return reply
        .type(file.mime_type)
        .header('content-disposition', 'attachment')
        .header('x-content-type-options', 'nosniff')
        .header('content-security-policy', 'sandbox')
        .header('cache-control', 'private, max-age=300')
        .send(file.data);
    },
  );

  // Public (newer TypeScript clients send no Authorization header here). Agentyard never moves a session or
  // conversation elsewhere, so the answer is always "no redirect"; it must reveal nothing about the id.
  app.get(
    '/agent/sessions/:sessionUuid/redirect',
    {
      config: { public: true },
      schema: {
        tags: ['agents'],
        operationId: 'getSessionRedirect',
        summary: 'Whether a shared session moved to a conversation (never, here): always {}',
        params: Type.Object({ sessionUuid: Str }),
        security: [],
        response: { 200: Type.Object({ conversation_id: OptStr }) },
      },
    },
    async () => ({}),
  );

  app.get(
    '/agent/conversations/:conversationId/redirect',
    {
      config: { public: true },
      schema: {
        tags: ['agents'],
        operationId: 'getConversationRedirect',
        summary: 'Whether a conversation moved to a shared session (never, here): always {}',
        params: Type.Object({ conversationId: Str }),
        security: [],
        response: { 200: Type.Object({ session_id: OptStr }) },
      },
    },
    async () => ({}),
  );
}
