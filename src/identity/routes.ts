import { CREDENTIALS_REVOKED_TOPIC } from '../kernel/topics.ts';
import { Type } from 'typebox';
import type { AppInstance } from '../plugin.ts';
import type { ServiceContext } from '../context.ts';
import { requireInstanceAdmin, requireTeamAdmin } from './guards.ts';
import { AppError } from '../kernel/errors.ts';
import { parseTimestamp } from '../kernel/hostile-input.ts';
import { isUniqueViolation } from '../store/errors.ts';
import * as sql from './sql.ts';
import type { ApiKeyRow, TeamRow } from './sql.ts';
import { createApiKey, createTeamWithAdmin } from './service.ts';

function keyView(row: ApiKeyRow) {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    role: row.role,
    instance_admin: row.instance_admin,
    principal: { uid: row.principal_id, type: row.principal_kind, display_name: row.principal_name },
    created_at: row.created_at.toISOString(),
    expires_at: row.expires_at?.toISOString() ?? null,
    last_used_at: row.last_used_at?.toISOString() ?? null,
    revoked_at: row.revoked_at?.toISOString() ?? null,
  };
}

function teamView(row: TeamRow) {
  return { id: row.id, name: row.name, created_at: row.created_at.toISOString() };
}

const TEAM_NAME = Type.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9][A-Za-z0-9 ._-]*$' });

export async function registerIdentityRoutes(app: AppInstance, ctx: ServiceContext): Promise<void> {
  app.get(
    '/whoami',
    { schema: { tags: ['identity'], operationId: 'whoami', summary: 'The caller: team, principal and key' } },
    async (request) => {
      const p = request.principal;
      const team = await sql.getTeam(ctx.db, p.teamId);
      return {
        team: team ? teamView(team) : { id: p.teamId },
        principal: {
          uid: p.subject.id,
          type: p.subject.type,
          display_name: p.subject.displayName,
          email: p.subject.email,
        },
        key_id: p.keyId,
        role: p.role,
        instance_admin: p.instanceAdmin,
      };
    },
  );

  app.get(
    '/api-keys',
    { schema: { tags: ['identity'], operationId: 'listApiKeys', summary: "List the team's API keys (by prefix)" } },
    async (request) => {
      requireTeamAdmin(request);
      return { api_keys: (await sql.listApiKeys(ctx.db, request.principal.teamId)).map(keyView) };
    },
  );

  app.post(
    '/api-keys',
    {
      schema: {
        tags: ['identity'],
        operationId: 'createApiKey',
        summary: 'Create an API key; the key is shown once',
        body: Type.Object({
          name: Type.String({ minLength: 1, maxLength: 100 }),
          role: Type.Optional(Type.Union([Type.Literal('admin'), Type.Literal('member')])),
          principal_id: Type.Optional(Type.String()),
          service_account: Type.Optional(Type.Object({ display_name: Type.String({ minLength: 1 }) })),
          expires_at: Type.Optional(Type.String({ format: 'date-time' })),
        }),
      },
    },
    async (request, reply) => {
      requireTeamAdmin(request);
      const body = request.body;
      const teamId = request.principal.teamId;
      if (body.principal_id && !(await sql.principalInTeam(ctx.db, teamId, body.principal_id))) {
        throw new AppError('resource_not_found', `principal ${body.principal_id} does not exist`);
      }
      const created = await ctx.db.transaction((tx) =>
        createApiKey(tx, {
          teamId,
          name: body.name,
          role: body.role ?? 'member',
          ...(body.principal_id
            ? { principalId: body.principal_id }
            : {
                newPrincipal: {
                  kind: 'service_account' as const,
                  displayName: body.service_account?.display_name ?? body.name,
                },
              }),
          expiresAt: parseTimestamp('expires_at', body.expires_at) ?? null,
        }),
      );
      const row = (await sql.getApiKey(ctx.db, teamId, created.id))!;
      return reply.code(201).send({ ...keyView(row), key: created.key });
    },
  );

  app.delete(
    '/api-keys/:keyId',
    {
      schema: {
        tags: ['identity'],
        operationId: 'revokeApiKey',
        summary: 'Revoke an API key',
        params: Type.Object({ keyId: Type.String() }),
      },
    },
    async (request) => {
      requireTeamAdmin(request);
      const row = await sql.revokeApiKey(ctx.db, request.principal.teamId, request.params.keyId);
      if (!row) throw new AppError('resource_not_found', `API key ${request.params.keyId} does not exist`);
      ctx.authenticator.invalidateAll();
      await ctx.bus.publish(CREDENTIALS_REVOKED_TOPIC, { key_id: row.id });
      return keyView(row);
    },
  );

  app.post(
    '/teams',
    {
      schema: {
        tags: ['identity'],
        operationId: 'createTeam',
        summary: "Create a team (instance admins); the answer holds the team's first admin key, shown once",
        body: Type.Object({
          name: TEAM_NAME,
          admin_name: Type.Optional(Type.String()),
          admin_email: Type.Optional(Type.String()),
        }),
      },
    },
    async (request, reply) => {
      requireInstanceAdmin(request);
      const body = request.body;
      const taken = () => new AppError('team_name_taken', `name: a team named "${body.name}" exists`);
      if (await sql.findTeamByName(ctx.db, body.name)) throw taken();
      const created = await ctx.db
        .transaction((tx) =>
          createTeamWithAdmin(tx, {
            name: body.name,
            ...(body.admin_name ? { adminName: body.admin_name } : {}),
            adminEmail: body.admin_email ?? null,
          }),
        )
        .catch((err: unknown) => {
          // Two requests for the same name at once: the unique index decides.
          if (isUniqueViolation(err)) throw taken();
          throw err;
        });
      const key = (await sql.getApiKey(ctx.db, created.team.id, created.adminKey.id))!;
      return reply
        .code(201)
        .send({ team: teamView(created.team), admin_key: { ...keyView(key), key: created.adminKey.key } });
    },
  );

  app.get(
    '/teams',
    { schema: { tags: ['identity'], operationId: 'listTeams', summary: 'List teams (instance admins)' } },
    async (request) => {
      requireInstanceAdmin(request);
      return { teams: (await sql.listTeams(ctx.db)).map(teamView) };
    },
  );
}
