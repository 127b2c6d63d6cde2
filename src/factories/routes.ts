import { FACTORY_SYNC_REQUESTED_TOPIC } from '../kernel/topics.ts';
import { Type } from 'typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { requireTeamAdmin } from '../identity/guards.ts';
import type { AppInstance } from '../plugin.ts';
import type { ServiceContext } from '../context.ts';
import { AppError } from '../kernel/errors.ts';
import { readOnlyError } from './apply/reconciler.ts';
import type { FactoryController } from './controller.ts';
import type { FactoryRow } from './apply/model.ts';
import * as sql from './apply/sql.ts';
import { toRunItem } from '../engine/model.ts';
import { sessionLinksFor } from '../runs/session-link.ts';
import { MAX_SECRET_BYTES } from '../secrets/service.ts';
import type { SecretProvider } from '../secrets/provider.ts';
import type { ApplyTrigger } from './apply/model.ts';
import { pushedBranch, verifyPushNotification } from './push-hook.ts';
import * as s from './schemas.ts';
import { decodeCursor, encodeCursor } from './service.ts';
import type { FactoryService } from './service.ts';
import { applyView, factoryView, outcomeView, referenceFactoryView, statusView } from './views.ts';

const TAGS = ['factories'];
const PUSH_BODY_LIMIT = 25 * 1024 * 1024;

/** What the factory routes are handed: the factory service, the reconcile loops and the server's secrets. */
export interface FactoryRouteDeps extends ServiceContext {
  factories: FactoryService;
  controller: FactoryController;
  secrets: SecretProvider;
}

export async function registerFactoryRoutes(app: AppInstance, ctx: FactoryRouteDeps): Promise<void> {
  const { factories, controller } = ctx;
  const view = (row: FactoryRow) => factoryView(row, ctx.config.publicUrl);

  /** Fetch and apply now: in this process when it runs the loops, else by asking the one that does. */
  const sync = async (factory: FactoryRow, trigger: ApplyTrigger) => {
    if (!controller.runsLoops) {
      await ctx.bus.publish(FACTORY_SYNC_REQUESTED_TOPIC, { factory_id: factory.id, trigger });
      return undefined;
    }
    return controller.request(factory.id, trigger, true);
  };

  app.post(
    '/factories',
    {
      schema: {
        tags: TAGS,
        summary:
          'Create a factory (team admins; a directory source needs an instance admin). No source = a managed factory, seeded with factory.yaml, a runner and the default agents.',
        body: Type.Object(
          { name: Type.String({ pattern: s.FACTORY_NAME_PATTERN }), source: Type.Optional(s.SourceInputSchema) },
          { additionalProperties: false },
        ),
        response: { 201: s.FactorySchema },
      },
    },
    async (request, reply) => {
      requireTeamAdmin(request);
      const subject = request.principal.subject;
      const row = await factories.create(request.principal.teamId, request.body, {
        instanceAdmin: request.principal.instanceAdmin,
        author: { name: subject.displayName, email: subject.email ?? `${subject.id}@agentyard.invalid` },
      });
      return reply.code(201).send(view(row));
    },
  );

  app.get(
    '/factories',
    {
      schema: {
        tags: TAGS,
        summary: "List the team's factories, oldest first",
        querystring: Type.Object({
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50 })),
          cursor: Type.Optional(Type.String()),
          search: Type.Optional(Type.String()),
          counts: Type.Optional(
            Type.Boolean({ description: 'Also count the live webhooks, automations and schedules of each factory' }),
          ),
        }),
        response: { 200: Type.Object({ factories: Type.Array(s.FactorySchema), page_info: s.PageInfoSchema }) },
      },
    },
    async (request) => {
      const q = request.query;
      const { rows, nextCursor } = await factories.list(request.principal.teamId, {
        limit: q.limit ?? 50,
        cursor: q.cursor,
        search: q.search,
      });
      const counts = q.counts
        ? await sql.countFactoryResources(
            ctx.db,
            rows.map((r) => r.id),
          )
        : undefined;
      return {
        factories: rows.map((row) => ({ ...view(row), ...(counts ? { counts: counts.get(row.id) } : {}) })),
        page_info: { has_next_page: nextCursor !== undefined, ...(nextCursor ? { next_cursor: nextCursor } : {}) },
      };
    },
  );

  app.get(
    '/factories/:id',
    {
      schema: {
        tags: TAGS,
        summary: 'A factory and its status',
        params: s.FactoryIdParams,
        querystring: Type.Object({
          counts: Type.Optional(
            Type.Boolean({ description: 'Also count the live webhooks, automations and schedules of the factory' }),
          ),
        }),
        response: { 200: s.FactorySchema },
      },
    },
    async (request) => {
      const row = await factories.get(request.principal.teamId, request.params.id);
      if (!request.query.counts) return view(row);
      const counts = await sql.countFactoryResources(ctx.db, [row.id]);
      return { ...view(row), counts: counts.get(row.id) };
    },
  );

  app.delete(
    '/factories/:id',
    {
      schema: {
        tags: TAGS,
        summary: 'Delete a factory (team admins): its webhooks answer 404 at once; delivery history stays',
        params: s.FactoryIdParams,
        response: { 200: Type.Object({ id: Type.String(), deleted: Type.Boolean() }) },
      },
    },
    async (request) => {
      requireTeamAdmin(request);
      const row = await factories.delete(request.principal.teamId, request.params.id);
      return { id: row.id, deleted: true };
    },
  );

  app.get(
    '/factories/:id/applies',
    {
      schema: {
        tags: TAGS,
        summary: 'Apply history, newest first: revision, commit, result, errors, warnings and changes',
        params: s.FactoryIdParams,
        querystring: Type.Object({
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
          cursor: Type.Optional(Type.String()),
        }),
        response: { 200: Type.Object({ applies: Type.Array(s.ApplySchema), page_info: s.PageInfoSchema }) },
      },
    },
    async (request) => {
      const factory = await factories.get(request.principal.teamId, request.params.id);
      const limit = request.query.limit ?? 20;
      const before = request.query.cursor ? decodeCursor(request.query.cursor) : undefined;
      const rows = await sql.listApplies(
        ctx.db,
        factory.id,
        limit + 1,
        before ? { startedAt: before.c, id: before.i } : undefined,
      );
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      const next =
        rows.length > limit && last ? encodeCursor({ c: last.started_at.toISOString(), i: last.id }) : undefined;
      return {
        applies: page.map(applyView),
        page_info: { has_next_page: next !== undefined, ...(next ? { next_cursor: next } : {}) },
      };
    },
  );

  app.post(
    '/factories/:id/sync',
    {
      schema: {
        tags: TAGS,
        summary: 'Fetch the source and apply its newest revision now (retries a refused revision); answers the outcome',
        params: s.FactoryIdParams,
        response: { 200: s.OutcomeSchema, 202: s.OutcomeSchema },
      },
    },
    async (request, reply) => {
      const factory = await factories.get(request.principal.teamId, request.params.id);
      const result = await sync(factory, 'sync');
      if (!result) {
        return reply.code(202).send({
          result: 'queued',
          revision: null,
          reason: null,
          message: 'sync requested from the controller',
          apply_id: null,
          errors: [],
          warnings: [],
          changes: [],
        });
      }
      const fresh = await factories.get(request.principal.teamId, factory.id);
      return outcomeView(result, statusView(fresh));
    },
  );

  // Git hosts cannot send an API key: the push hook authenticates with the factory's push secret instead
  // (GitHub signature, GitLab token or a bearer secret), and only ever triggers a fetch.
  await app.register(async (plugin) => {
    const hook = plugin.withTypeProvider<TypeBoxTypeProvider>();
    hook.removeAllContentTypeParsers();
    // GitHub caps webhook payloads at 25 MB, and the signature covers all of it.
    hook.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: PUSH_BODY_LIMIT }, (_req, body, done) =>
      done(null, body),
    );
    hook.post(
      '/factories/:id/sync/push',
      {
        config: { public: true },
        bodyLimit: PUSH_BODY_LIMIT,
        schema: {
          tags: TAGS,
          summary:
            "Push notification from a Git host (GitHub/GitLab webhook); authenticated with the factory's push_secret",
          params: s.FactoryIdParams,
          security: [],
          response: { 202: Type.Object({ result: Type.String(), message: Type.String() }) },
        },
      },
      async (request, reply) => {
        const factory = await sql.getFactory(ctx.db, request.params.id);
        const notFound = new AppError('resource_not_found', 'no factory with a push hook here');
        if (factory?.source.type !== 'git' || !factory.source.push_secret) throw notFound;
        const secret = await ctx.secrets.get(factory.team_id, factory.source.push_secret);
        const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        const verified =
          secret && secret.length <= MAX_SECRET_BYTES
            ? verifyPushNotification(request.headers, body, secret, new Date())
            : { ok: false as const, reason: 'the push secret cannot be checked' };
        if (!verified.ok) {
          throw new AppError(
            'authentication_required',
            `the push notification does not carry the push secret: ${verified.reason}`,
          );
        }
        if (request.headers['x-github-event'] === 'ping')
          return reply.code(202).send({ result: 'ignored', message: 'ping' });
        const branch = pushedBranch(body);
        if (branch !== undefined && branch !== factory.source.branch) {
          return reply.code(202).send({
            result: 'ignored',
            message: `push to ${branch}, not the production branch ${factory.source.branch}`,
          });
        }
        void sync(factory, 'push')?.catch(() => {});
        return reply.code(202).send({ result: 'queued', message: `fetching ${factory.source.branch}` });
      },
    );
  });

  app.get(
    '/factories/:id/definition',
    {
      schema: {
        tags: TAGS,
        summary: 'The files and resolved definition of the applied revision',
        params: s.FactoryIdParams,
        response: {
          200: Type.Object({
            revision: Type.Union([Type.String(), Type.Null()]),
            applied_at: Type.Union([Type.String(), Type.Null()]),
            files: Type.Array(s.FileSchema),
            definition: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
          }),
        },
      },
    },
    async (request) => {
      const factory = await factories.get(request.principal.teamId, request.params.id);
      return {
        revision: factory.applied_revision,
        applied_at: factory.applied_at?.toISOString() ?? null,
        files: await sql.listFactoryFiles(ctx.db, factory.id),
        definition: factory.definition as unknown as Record<string, unknown> | null,
      };
    },
  );

  app.get(
    '/factories/:id/revisions/:revision/files',
    {
      schema: {
        tags: TAGS,
        summary:
          "The files of a revision: the applied one's, or those of the latest revision refused for its definition's errors",
        params: Type.Object({
          id: Type.String({ minLength: 1, maxLength: 64 }),
          revision: Type.String({ minLength: 1, maxLength: 300 }),
        }),
        response: {
          200: Type.Object({
            revision: Type.String(),
            applied: Type.Boolean({ description: 'Whether this is the applied revision' }),
            files: Type.Array(s.FileSchema),
          }),
        },
      },
    },
    async (request) => {
      const factory = await factories.get(request.principal.teamId, request.params.id);
      const { revision } = request.params;
      const files = await sql.revisionFiles(ctx.db, factory, revision);
      if (!files)
        throw new AppError(
          'resource_not_found',
          `factory ${factory.id} keeps no files of revision ${revision}: only the applied revision's and the latest refused one's`,
        );
      return { revision, applied: revision === factory.applied_revision, files };
    },
  );

  app.post(
    '/factories/:id/plan',
    {
      schema: {
        tags: TAGS,
        summary:
          'What applying these files would create, change and delete, with the checks that need live state; applies nothing',
        params: s.FactoryIdParams,
        body: s.FilesBodySchema,
        response: { 200: s.PlanResultSchema },
      },
    },
    async (request) => {
      const factory = await factories.get(request.principal.teamId, request.params.id);
      const prepared = await controller.reconciler.prepare(factory, request.body.files, {
        forApply: false,
        refreshSecrets: true,
      });
      const v = prepared.validation;
      return {
        valid: v.valid,
        schema_version: v.schemaVersion,
        diagnostics: v.diagnostics,
        changes: prepared.plan?.changes ?? [],
        warnings: prepared.plan?.warnings ?? [],
        applied_revision: factory.applied_revision,
        state_dependent_checks_not_run: v.stateDependentChecksNotRun as unknown as Record<string, unknown>[],
        deferred_resolutions: v.deferredResolutions as unknown as Record<string, unknown>[],
      };
    },
  );

  app.post(
    '/factories/:id/apply',
    {
      schema: {
        tags: TAGS,
        summary: 'Replace the files of a managed factory: validated, committed and applied in one step (team admins)',
        params: s.FactoryIdParams,
        body: s.FilesBodySchema,
        response: { 200: s.OutcomeSchema },
      },
    },
    async (request) => {
      requireTeamAdmin(request);
      const factory = await factories.get(request.principal.teamId, request.params.id);
      if (factory.source.type !== 'managed') throw readOnlyError(factory);
      const subject = request.principal.subject;
      const result = await controller.reconciler.applyManagedChange(factory.id, () => request.body.files, {
        author: { name: subject.displayName, email: subject.email ?? `${subject.id}@agentyard.invalid` },
        message: request.body.message?.trim() || 'agentyard apply',
      });
      return outcomeView(result, statusView(await factories.get(request.principal.teamId, factory.id)));
    },
  );

  app.post(
    '/factories/:id/runs',
    {
      schema: {
        tags: TAGS,
        summary:
          "Send work to a factory: a run of its foreman with the definition's defaults (agentDefaults, workerHost)",
        params: s.FactoryIdParams,
        body: s.CreateFactoryRunBody,
        response: { 200: s.RunCreatedSchema },
      },
    },
    async (request) => {
      const { run } = await factories.createRun(request.principal, request.params.id, request.body);
      return { run_id: run.id, task_id: run.id, state: run.state, factory_id: request.params.id };
    },
  );

  // ------------------------------------------------------------------ the product's public factory API

  app.get(
    '/factory',
    {
      schema: {
        tags: TAGS,
        summary: 'List factories (product API shape)',
        querystring: Type.Object({
          search: Type.Optional(Type.String()),
          cursor: Type.Optional(Type.String()),
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50 })),
          team_uid: Type.Optional(Type.String()),
        }),
      },
    },
    async (request) => {
      const q = request.query;
      const teamUid = q.team_uid ?? (request.headers['x-warp-team-uid'] as string | undefined);
      if (teamUid && teamUid !== request.principal.teamId)
        throw new AppError('not_authorized', `this key does not belong to team ${teamUid}`);
      const { rows, nextCursor } = await factories.list(request.principal.teamId, {
        limit: q.limit ?? 50,
        cursor: q.cursor,
        search: q.search,
      });
      return {
        factories: rows.map(referenceFactoryView),
        page_info: { has_next_page: nextCursor !== undefined, ...(nextCursor ? { next_cursor: nextCursor } : {}) },
      };
    },
  );

  app.get(
    '/factory/:uid',
    { schema: { tags: TAGS, summary: 'A factory (product API shape)', params: Type.Object({ uid: Type.String() }) } },
    async (request) => referenceFactoryView(await factories.get(request.principal.teamId, request.params.uid)),
  );

  app.post(
    '/factory/:uid/runs',
    {
      schema: {
        tags: TAGS,
        summary: "Send work to a factory's foreman (product API shape)",
        params: Type.Object({ uid: Type.String() }),
        body: Type.Object({
          prompt: Type.String(),
          title: Type.Optional(Type.String()),
          ticket_ref: Type.Optional(Type.String()),
          ticket_url: Type.Optional(Type.String()),
        }),
      },
    },
    async (request) => {
      const body = request.body;
      if (!body.prompt.trim()) throw new AppError('invalid_request', 'prompt must not be empty');
      const { run, foreman } = await factories.createRun(request.principal, request.params.uid, {
        prompt: body.prompt,
        title: body.title,
      });
      const ticketRef = body.ticket_ref?.trim() || `adhoc:${run.id}`;
      return {
        factory_uid: request.params.uid,
        foreman_agent: foreman,
        run_id: run.id,
        state: run.state,
        ticket_ref: ticketRef,
        run_url: toRunItem(run, sessionLinksFor(ctx).urlFor).session_link,
      };
    },
  );
}
