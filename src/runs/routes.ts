import { Type } from 'typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppInstance } from '../plugin.ts';
import type { ServiceContext } from '../context.ts';
import { AppError } from '../kernel/errors.ts';
import { CONSOLE_SESSION_COOKIE, consoleRunPath } from '../kernel/api.ts';
import { parseTimestamp } from '../kernel/hostile-input.ts';
import type { Creator, RunRow } from '../engine/model.ts';
import { RUN_STATES } from '../engine/state-machine.ts';
import { toRunItem } from '../engine/model.ts';
import { sessionLinksFor } from './session-link.ts';
import type { SessionLinks } from './session-link.ts';
import { getRunBySession } from './sql.ts';
import { renderSessionPage } from './session-page.ts';
import { PAGE_SECURITY_HEADERS } from '../kernel/page-security.ts';
import { listRuns } from './list.ts';
import { checkRunModels, knownModels } from './models.ts';
import type { RunFilters, SortField, SortOrder } from './list.ts';
import * as sql from './sql.ts';
import * as schemas from './schemas.ts';
import type { RunService } from './service.ts';
import type { Static } from 'typebox';
import type { RunSecretsCheck } from './secret-names.ts';

const MAX_ATTACHMENTS = 5;

function decodeBase64(field: string, data: string): Buffer {
  const compact = data.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(compact)) throw new AppError('invalid_request', `${field} must be base64`);
  return Buffer.from(compact, compact.includes('-') || compact.includes('_') ? 'base64url' : 'base64');
}

/** Runs and messages one tree answer holds at most. */
const MAX_TREE_RUNS = 200;
const MAX_TREE_MESSAGES = 500;

export function creatorOf(request: FastifyRequest): Creator {
  const s = request.principal.subject;
  return { id: s.id, type: s.type, displayName: s.displayName, email: s.email };
}

/** `metadata[key]=value` query members (deep-object form), at most 5. */
function metadataFilter(query: Record<string, unknown>): Record<string, string> | undefined {
  const entries = Object.entries(query)
    .map(([k, v]) => [/^metadata\[(.+)\]$/.exec(k)?.[1], Array.isArray(v) ? v[0] : v] as const)
    .filter((e): e is readonly [string, string] => e[0] !== undefined && typeof e[1] === 'string');
  if (entries.length > 5) throw new AppError('invalid_request', 'at most 5 metadata filters');
  return entries.length ? Object.fromEntries(entries) : undefined;
}

type ListQuery = Static<typeof schemas.ListRunsQuerySchema>;

function filtersOf(q: ListQuery): RunFilters {
  const f: RunFilters = {};
  if (q.state?.length) f.states = q.state;
  const configName = q.name ?? q.config_name;
  if (configName !== undefined) f.configName = configName;
  if (q.model_id !== undefined) f.modelId = q.model_id;
  if (q.creator !== undefined) f.creator = q.creator;
  if (q.source !== undefined) f.source = q.source;
  if (q.execution_location !== undefined) f.executionLocation = q.execution_location;
  const createdAfter = parseTimestamp('created_after', q.created_after);
  if (createdAfter) f.createdAfter = createdAfter;
  const createdBefore = parseTimestamp('created_before', q.created_before);
  if (createdBefore) f.createdBefore = createdBefore;
  const updatedAfter = parseTimestamp('updated_after', q.updated_after);
  if (updatedAfter) f.updatedAfter = updatedAfter;
  if (q.environment_id !== undefined) f.environmentId = q.environment_id;
  const skill = q.skill ?? q.skill_spec;
  if (skill !== undefined) f.skillSpec = skill;
  if (q.schedule_id !== undefined) f.scheduleId = q.schedule_id;
  if (q.ancestor_run_id !== undefined) f.ancestorRunId = q.ancestor_run_id;
  if (q.artifact_type !== undefined) f.artifactType = q.artifact_type;
  if (q.q !== undefined) f.q = q.q;
  const factory = q.factory_uid ?? q.factory_id;
  if (factory !== undefined) f.factoryId = factory;
  if (q.automation_id !== undefined) f.automationId = q.automation_id;
  if (q.executor !== undefined) f.executor = q.executor;
  if (q.worker_host !== undefined) f.workerHost = q.worker_host;
  const metadata = metadataFilter(q as Record<string, unknown>);
  if (metadata) f.metadata = metadata;
  return f;
}

/** An RFC 9111 `Warning` value (299: a persistent warning), its text kept to visible ASCII. */
function warningHeader(message: string): string {
  return `299 agentyard "${message.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '\\$&')}"`;
}

export async function registerRunRoutes(
  app: AppInstance,
  ctx: ServiceContext,
  runs: RunService,
  checkSecrets: RunSecretsCheck,
): Promise<void> {
  const links = sessionLinksFor(ctx);
  const known = knownModels(ctx.config);
  const createRun = async (
    request: FastifyRequest<{ Body: Static<typeof schemas.RunAgentRequestSchema> | undefined }>,
    reply: FastifyReply,
  ) => {
    const body = request.body ?? {};
    await checkSecrets(ctx.db, request.principal, body.config);
    const attachments = [
      ...(body.attachments ?? []).map((a, i) => ({
        fileName: a.file_name,
        mimeType: a.mime_type,
        data: decodeBase64(`attachments[${i}].data`, a.data),
      })),
      ...(body.images ?? []).map((img, i) => ({
        fileName: `image-${i + 1}.${img.mime_type.split('/')[1] ?? 'bin'}`,
        mimeType: img.mime_type,
        data: decodeBase64(`images[${i}].data`, img.data),
      })),
    ];
    const names = new Set<string>();
    for (const [i, a] of attachments.entries()) {
      if (names.has(a.fileName))
        throw new AppError('invalid_request', `attachments[${i}].file_name "${a.fileName}" is used twice`);
      names.add(a.fileName);
    }
    if (attachments.length > MAX_ATTACHMENTS)
      throw new AppError('invalid_request', `attachments: at most ${MAX_ATTACHMENTS} files`);
    const idempotencyKey = request.headers['idempotency-key'];
    if (typeof idempotencyKey === 'string' && idempotencyKey.length > 255) {
      throw new AppError('invalid_request', 'the Idempotency-Key header must be at most 255 characters');
    }
    const warnings = checkRunModels(known, body.config);
    let conversationId: string | null = null;
    if (body.conversation_id !== undefined) {
      conversationId = (await sql.conversationOf(ctx.db, request.principal.teamId, body.conversation_id)) ?? null;
      if (!conversationId)
        throw new AppError(
          'resource_not_found',
          `conversation_id: conversation ${body.conversation_id} does not exist`,
        );
    }
    const { run, replayed } = await runs.create(
      {
        teamId: request.principal.teamId,
        prompt: body.prompt,
        title: body.title,
        skill: body.skill,
        config: body.config,
        source: 'API',
        creator: creatorOf(request),
        agentIdentityUid: body.agent_identity_uid ?? null,
        parentRunId: body.parent_run_id ?? null,
        conversationId,
        attachments,
        ...(body.metadata ? { metadata: body.metadata } : {}),
      },
      typeof idempotencyKey === 'string' && idempotencyKey ? { idempotency: { key: idempotencyKey, body } } : {},
    );
    if (replayed) reply.header('idempotent-replayed', 'true');
    if (warnings.length)
      reply.header(
        'warning',
        warnings.map((w) => warningHeader(w.message)),
      );
    return {
      run_id: run.id,
      task_id: run.id,
      state: run.state,
      at_capacity: false,
      ...(warnings.length ? { warnings } : {}),
    };
  };

  const createOptions = {
    schema: {
      tags: ['runs'],
      operationId: 'createRun',
      summary: 'Create a run',
      body: schemas.RunAgentRequestSchema,
      response: { 200: schemas.RunAgentResponseSchema },
    },
  };
  app.post('/agent/runs', createOptions, createRun);
  app.post(
    '/agent/run',
    { ...createOptions, schema: { ...createOptions.schema, operationId: 'runAgent', summary: 'Create a run (alias)' } },
    createRun,
  );

  const runItem = async (row: RunRow) =>
    toRunItem(row, links.urlFor, (await sql.executionSeconds(ctx.db, [row.id])).get(row.id));

  const list = async (q: ListQuery, teamId: string) => {
    const { rows, nextCursor } = await listRuns(ctx.db, {
      teamId,
      filters: filtersOf(q),
      sortBy: (q.sort_by ?? 'updated_at') as SortField,
      sortOrder: (q.sort_order ?? 'desc') as SortOrder,
      limit: q.limit ?? 20,
      ...(q.cursor ? { cursor: q.cursor } : {}),
    });
    const executed = await sql.executionSeconds(
      ctx.db,
      rows.map((r) => r.id),
    );
    return {
      runs: rows.map((r) => toRunItem(r, links.urlFor, executed.get(r.id))),
      page_info: { has_next_page: nextCursor !== undefined, ...(nextCursor ? { next_cursor: nextCursor } : {}) },
    };
  };

  app.get(
    '/agent/runs',
    {
      schema: {
        tags: ['runs'],
        operationId: 'listRuns',
        summary: 'List runs',
        querystring: schemas.ListRunsQuerySchema,
        response: { 200: schemas.ListRunsResponseSchema },
      },
    },
    async (request) => list(request.query, request.principal.teamId),
  );

  app.get(
    '/run-counts',
    {
      schema: {
        tags: ['runs'],
        operationId: 'countRuns',
        summary: "The team's runs counted by state (every state, or the states asked), uncapped",
        querystring: Type.Object({ state: Type.Optional(Type.Array(schemas.RunStateSchema)) }),
        response: {
          200: Type.Object({
            counts: Type.Record(Type.String(), Type.Integer(), {
              description: 'Each state asked (every state by default) and its number of runs, 0 included',
            }),
            total: Type.Integer({ description: 'The sum of the counts' }),
          }),
        },
      },
    },
    async (request) => {
      const states = request.query.state?.length ? [...new Set(request.query.state)] : [...RUN_STATES];
      const found = await sql.countRunsByState(ctx.db, request.principal.teamId, states);
      const counts = Object.fromEntries(states.map((state) => [state, found.get(state) ?? 0]));
      return { counts, total: Object.values(counts).reduce((a, b) => a + b, 0) };
    },
  );

  app.get(
    '/agent/runs/:runId',
    {
      schema: {
        tags: ['runs'],
        operationId: 'getRun',
        summary: 'Get a run',
        params: schemas.RunIdParamsSchema,
        response: { 200: schemas.RunItemSchema },
      },
    },
    async (request) => {
      const row = await runs.get(request.principal.teamId, request.params.runId);
      const [item, result] = await Promise.all([runItem(row), sql.runResult(ctx.db, row.id)]);
      return { ...item, result };
    },
  );

  app.get(
    '/agent/runs/:runId/tree',
    {
      schema: {
        tags: ['runs'],
        operationId: 'getRunTree',
        summary:
          "A run's tree (docs/orchestration.md): its root first, then every run below the root in creation order (at most 200), and the reports, questions and replies among them in order (at most 500)",
        params: schemas.RunIdParamsSchema,
        response: { 200: schemas.RunTreeResponseSchema },
      },
    },
    async (request) => {
      const teamId = request.principal.teamId;
      const rows = await sql.runTree(ctx.db, teamId, request.params.runId, MAX_TREE_RUNS + 1);
      if (rows.length === 0) throw new AppError('resource_not_found', `run ${request.params.runId} does not exist`);
      const shown = rows.slice(0, MAX_TREE_RUNS);
      const ids = shown.map((r) => r.id);
      const [executed, messages] = await Promise.all([
        sql.executionSeconds(ctx.db, ids),
        sql.treeMessages(ctx.db, ids, MAX_TREE_MESSAGES),
      ]);
      return {
        root_run_id: shown[0]!.id,
        runs: shown.map((r) => ({ ...toRunItem(r, links.urlFor, executed.get(r.id)), depth: r.tree_depth })),
        truncated: rows.length > MAX_TREE_RUNS,
        messages: messages.map((m) => ({
          run_id: m.run_id,
          sequence: m.sequence,
          type: m.type,
          text: String((m.type === 'question' ? m.data.question : m.data.text) ?? ''),
          ...(typeof m.data.to_run_id === 'string' ? { to_run_id: m.data.to_run_id } : {}),
          occurred_at: m.occurred_at.toISOString(),
        })),
      };
    },
  );

  // Legacy clients (warp-sdk ≤0.3) used /agent/tasks.
  app.get(
    '/agent/tasks',
    {
      schema: {
        tags: ['runs'],
        operationId: 'listTasks',
        summary: 'List runs (legacy alias)',
        querystring: schemas.ListRunsQuerySchema,
      },
    },
    async (request) => {
      const page = await list(request.query, request.principal.teamId);
      return { tasks: page.runs, page_info: page.page_info };
    },
  );
  app.get(
    '/agent/tasks/:runId',
    {
      schema: {
        tags: ['runs'],
        operationId: 'getTask',
        summary: 'Get a run (legacy alias)',
        params: schemas.RunIdParamsSchema,
      },
    },
    async (request) => runItem(await runs.get(request.principal.teamId, request.params.runId)),
  );

  app.post(
    '/agent/runs/:runId/cancel',
    {
      schema: {
        tags: ['runs'],
        operationId: 'cancelRun',
        summary: 'Cancel a queued or running run; answers the cancelled run id as a JSON string',
        params: schemas.RunIdParamsSchema,
        response: { 200: Type.String() },
      },
    },
    async (request, reply) => {
      const run = await runs.cancel(request.principal.teamId, request.params.runId);
      return reply
        .type('application/json')
        .serializer((v: unknown) => JSON.stringify(v))
        .send(run.id);
    },
  );

  app.post(
    '/agent/runs/:runId/followups',
    {
      schema: {
        tags: ['runs'],
        operationId: 'submitFollowup',
        summary: 'Send a follow-up message to a run',
        params: schemas.RunIdParamsSchema,
        body: Type.Optional(schemas.RunFollowupRequestSchema),
        response: {
          200: Type.Object({ followup_id: Type.String(), run_id: Type.String(), state: schemas.RunStateSchema }),
        },
      },
    },
    async (request) => {
      const message = request.body?.message?.trim();
      if (!message) throw new AppError('invalid_request', 'message is required');
      const { followupId, run } = await runs.followup(request.principal.teamId, request.params.runId, {
        message,
        mode: request.body?.mode ?? 'normal',
        creatorId: request.principal.subject.id,
        admin: request.principal.role === 'admin' || request.principal.instanceAdmin,
      });
      return { followup_id: followupId, run_id: run.id, state: run.state };
    },
  );
}

export async function registerFollowupListRoute(app: AppInstance, runs: RunService): Promise<void> {
  app.get(
    '/agent/runs/:runId/followups',
    {
      schema: {
        tags: ['runs'],
        operationId: 'listFollowups',
        summary: "A run's follow-up messages, oldest first; consumed_at is set when an execution took the message",
        params: schemas.RunIdParamsSchema,
        response: { 200: Type.Object({ followups: Type.Array(schemas.FollowupSchema) }) },
      },
    },
    async (request) => {
      const followups = await runs.followups(request.principal.teamId, request.params.runId);
      return {
        followups: followups.map((f) => ({
          followup_id: f.id,
          message: f.message,
          mode: f.mode,
          ...(f.creator_id ? { creator_uid: f.creator_id } : {}),
          created_at: f.created_at.toISOString(),
          consumed_at: f.consumed_at?.toISOString() ?? null,
        })),
      };
    },
  );
}

/** `GET /sessions/:sessionId` (a root route): the run's session page, where a signed `session_link` points. */
export async function registerSessionPageRoute(
  app: AppInstance,
  ctx: ServiceContext,
  links: Pick<SessionLinks, 'verify' | 'urlFor'>,
): Promise<void> {
  // A signed link (run answers carry one) with its lifetime; without a valid signature the session does not
  // exist, as far as the caller can tell.
  app.get(
    '/sessions/:sessionId',
    {
      schema: {
        hide: true,
        params: Type.Object({ sessionId: Type.String() }),
        querystring: Type.Object({ exp: Type.Optional(Type.String()), sig: Type.Optional(Type.String()) }),
      },
      // Every answer (the page, a redirect, a refusal) is under the console's CSP and never framed.
      onSend: async (_request, reply, payload) => {
        reply.headers(PAGE_SECURITY_HEADERS);
        return payload;
      },
    },
    async (request, reply) => {
      const { sessionId } = request.params;
      const check = links.verify(sessionId, request.query.exp, request.query.sig);
      if (check === 'invalid') throw new AppError('resource_not_found', 'no such session');
      if (check === 'expired')
        throw new AppError(
          'session_link_expired',
          "this session link has expired; the run's session_link has a new one",
        );
      const row = await getRunBySession(ctx.db, sessionId);
      if (!row) throw new AppError('resource_not_found', 'no such session');
      // Someone signed in to the console gets the run's full page there (which checks their team's access).
      if (request.headers.cookie?.split(';').some((c) => c.trim().startsWith(`${CONSOLE_SESSION_COOKIE}=`))) {
        return reply.redirect(consoleRunPath(row.id), 303);
      }
      return reply
        .type('text/html; charset=utf-8')
        .header('cache-control', 'private, no-store')
        .header('referrer-policy', 'no-referrer')
        .send(renderSessionPage(toRunItem(row, links.urlFor)));
    },
  );
}
