import { Type } from 'typebox';
import type { ServiceContext } from '../context.ts';
import { requireTeamAdmin } from '../identity/guards.ts';
import { AppError } from '../kernel/errors.ts';
import { CREDENTIALS_REVOKED_TOPIC } from '../kernel/topics.ts';
import type { AppInstance } from '../plugin.ts';
import type { WorkerHub } from './hub.ts';
import { WORKER_CONNECT_PATH } from './protocol.ts';
import * as sql from './sql.ts';
import type { WorkerTokenRow } from './sql.ts';
import { createWorkerToken } from './tokens.ts';

/** Self-hosted workers connect by WebSocket upgrade on WORKER_CONNECT_PATH; other upgrades are refused. */
export async function registerWorkerConnectRoute(app: AppInstance, hub: WorkerHub): Promise<void> {
  const server = app.server;
  server.on('upgrade', (request, socket, head) => {
    const path = (request.url ?? '').split('?')[0];
    if (path === WORKER_CONNECT_PATH) return hub.handleUpgrade(request, socket, head);
    if (server.listenerCount('upgrade') === 1) socket.destroy();
  });
}

const WorkerTokenSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  prefix: Type.String({ description: 'The first characters of the token, to recognise it; never enough to use it' }),
  worker_ids: Type.Array(Type.String(), { description: 'The worker ids a worker may connect as with this token' }),
  created_by: Type.Object({ uid: Type.String(), display_name: Type.String() }),
  created_at: Type.String({ format: 'date-time' }),
  last_used_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  revoked_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
});

function tokenView(row: WorkerTokenRow) {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    worker_ids: row.worker_ids,
    created_by: { uid: row.created_by, display_name: row.created_by_name },
    created_at: row.created_at.toISOString(),
    last_used_at: row.last_used_at?.toISOString() ?? null,
    revoked_at: row.revoked_at?.toISOString() ?? null,
  };
}

const tags = ['workers'];

/** `/workers/tokens`: what self-hosted workers connect with (team admins only). */
export async function registerWorkerTokenRoutes(app: AppInstance, ctx: ServiceContext): Promise<void> {
  app.post(
    '/workers/tokens',
    {
      schema: {
        tags,
        operationId: 'createWorkerToken',
        summary:
          'Create a worker token for named worker ids (team admins); the token is shown once, only its hash is stored',
        body: Type.Object(
          {
            name: Type.String({ minLength: 1, maxLength: 100 }),
            worker_ids: Type.Array(Type.String({ maxLength: 63 }), { minItems: 1, maxItems: 100 }),
          },
          { additionalProperties: false },
        ),
        response: { 201: Type.Intersect([WorkerTokenSchema, Type.Object({ token: Type.String() })]) },
      },
    },
    async (request, reply) => {
      requireTeamAdmin(request);
      const { principal } = request;
      const { row, token } = await createWorkerToken(ctx.db, {
        teamId: principal.teamId,
        name: request.body.name,
        workerIds: request.body.worker_ids,
        createdBy: { id: principal.subject.id, name: principal.subject.displayName },
      });
      return reply.code(201).send({ ...tokenView(row), token });
    },
  );

  app.get(
    '/workers/tokens',
    {
      schema: {
        tags,
        operationId: 'listWorkerTokens',
        summary: "The team's worker tokens, revoked ones included (team admins; never a token's value)",
        response: { 200: Type.Object({ worker_tokens: Type.Array(WorkerTokenSchema) }) },
      },
    },
    async (request) => {
      requireTeamAdmin(request);
      return { worker_tokens: (await sql.listWorkerTokens(ctx.db, request.principal.teamId)).map(tokenView) };
    },
  );

  app.delete(
    '/workers/tokens/:tokenId',
    {
      schema: {
        tags,
        operationId: 'revokeWorkerToken',
        summary: 'Revoke a worker token (team admins): the workers connected with it are disconnected',
        params: Type.Object({ tokenId: Type.String({ minLength: 1 }) }),
        response: { 200: WorkerTokenSchema },
      },
    },
    async (request) => {
      requireTeamAdmin(request);
      const row = await sql.revokeWorkerToken(ctx.db, request.principal.teamId, request.params.tokenId);
      if (!row) throw new AppError('resource_not_found', `worker token ${request.params.tokenId} does not exist`);
      await ctx.bus.publish(CREDENTIALS_REVOKED_TOPIC, { worker_token_id: row.id });
      return tokenView(row);
    },
  );
}
