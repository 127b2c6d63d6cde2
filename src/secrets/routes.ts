import { SECRETS_CHANGED_TOPIC } from '../kernel/topics.ts';
import { Type } from 'typebox';
import { requireTeamAdmin } from '../identity/guards.ts';
import type { AppInstance } from '../plugin.ts';
import type { ServiceContext } from '../context.ts';
import type { SecretRow } from './sql.ts';
import { MAX_SECRET_BYTES, SECRET_NAME_RULE } from './service.ts';
import type { SecretService } from './service.ts';

const SecretSchema = Type.Object({
  name: Type.String(),
  created_by: Type.Union([Type.String(), Type.Null()], {
    description:
      "The principal whose key wrote the value (it owns the secret); null: the team admins' (older secrets, webhook secrets)",
  }),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
});

const NameParams = Type.Object({ name: Type.String({ description: `Secret name: ${SECRET_NAME_RULE}` }) });

function secretView(row: SecretRow) {
  return {
    name: row.name,
    created_by: row.created_by,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export async function registerSecretRoutes(
  app: AppInstance,
  ctx: ServiceContext & { managedSecrets: SecretService },
): Promise<void> {
  const secrets = ctx.managedSecrets;

  app.get(
    '/secrets',
    {
      schema: {
        tags: ['secrets'],
        summary: "List the team's managed secrets: names and timestamps, never values",
        response: { 200: Type.Object({ secrets: Type.Array(SecretSchema) }) },
      },
    },
    async (request) => ({ secrets: (await secrets.list(request.principal.teamId)).map(secretView) }),
  );

  app.get(
    '/secrets/:name',
    {
      schema: {
        tags: ['secrets'],
        summary: 'One managed secret (name and timestamps, never the value)',
        params: NameParams,
        response: { 200: SecretSchema },
      },
    },
    async (request) => secretView(await secrets.get(request.principal.teamId, request.params.name)),
  );

  app.put(
    '/secrets/:name',
    {
      schema: {
        tags: ['secrets'],
        summary: 'Create or replace a managed secret (team admins). A webhook uses a new value from its next apply.',
        params: NameParams,
        body: Type.Object(
          { value: Type.String({ minLength: 1, maxLength: MAX_SECRET_BYTES }) },
          { additionalProperties: false },
        ),
        response: { 200: SecretSchema, 201: SecretSchema },
      },
    },
    async (request, reply) => {
      requireTeamAdmin(request);
      const { principal } = request;
      const { row, created } = await secrets.put(
        principal.teamId,
        request.params.name,
        request.body.value,
        principal.subject.id,
      );
      await ctx.bus.publish(SECRETS_CHANGED_TOPIC, { team_id: row.team_id, name: row.name });
      return reply.code(created ? 201 : 200).send(secretView(row));
    },
  );

  app.delete(
    '/secrets/:name',
    {
      schema: {
        tags: ['secrets'],
        summary: 'Delete a managed secret (team admins)',
        params: NameParams,
        response: { 200: SecretSchema },
      },
    },
    async (request) => {
      requireTeamAdmin(request);
      const row = await secrets.delete(request.principal.teamId, request.params.name);
      await ctx.bus.publish(SECRETS_CHANGED_TOPIC, { team_id: row.team_id, name: row.name });
      return secretView(row);
    },
  );
}
