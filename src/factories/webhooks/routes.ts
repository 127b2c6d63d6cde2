import type { AppInstance } from '../../plugin.ts';
import type { ServiceContext } from '../../context.ts';
import type { ManagedFactoryContext } from '../managed-change.ts';
import { teamFactory } from '../managed-change.ts';
import { FactoryIdParams, WebhookSchema } from '../schemas.ts';
import * as factorySql from '../apply/sql.ts';
import { webhookView as factoryWebhookView } from './views.ts';
import { requireTeamAdmin } from '../../identity/guards.ts';
import type { WebhookRow } from '../apply/model.ts';
import { type WebhookManagement, teamWebhook } from './management.ts';
import * as s from './schemas.ts';
import { Type } from 'typebox';

const TAGS = ['webhooks'];

/** The factories API's view of a webhook, plus its factory, state and whether it has a secret yet. */
export function webhookView(row: WebhookRow, ctx: ServiceContext) {
  let hasSecret = false;
  if (row.secret_ciphertext) {
    try {
      hasSecret = ctx.cipher.decrypt(row.secret_ciphertext) !== '';
    } catch {
      hasSecret = false;
    }
  }
  return {
    ...factoryWebhookView(row, ctx.config.webhookBaseUrl),
    factory_id: row.factory_id,
    state: row.deleted_at ? ('deleted' as const) : row.enabled ? ('enabled' as const) : ('disabled' as const),
    has_secret: hasSecret,
    ...(row.deleted_at ? { deleted_at: row.deleted_at.toISOString() } : {}),
  };
}

export async function registerWebhookManagementRoutes(
  app: AppInstance,
  ctx: ManagedFactoryContext & { webhooks: WebhookManagement },
): Promise<void> {
  const webhooks = ctx.webhooks;

  app.get(
    '/factories/:id/webhooks',
    {
      schema: {
        tags: ['factories'],
        summary: "The factory's live webhooks with their ingress URLs",
        params: FactoryIdParams,
        response: { 200: Type.Object({ webhooks: Type.Array(WebhookSchema) }) },
      },
    },
    async (request) => {
      const factory = await teamFactory(ctx, request.principal.teamId, request.params.id);
      const rows = await factorySql.listFactoryWebhooks(ctx.db, factory.id, { includeDeleted: false });
      return { webhooks: rows.map((r) => factoryWebhookView(r, ctx.config.webhookBaseUrl)) };
    },
  );

  app.post(
    '/factories/:id/webhooks',
    {
      schema: {
        tags: TAGS,
        summary:
          'Create a webhook on a managed factory (a webhooks/<name>.yaml file, committed and applied); shows the secret once (team admins)',
        params: s.FactoryIdParams,
        body: s.CreateWebhookBody,
        response: { 201: s.WebhookWithSecretSchema },
      },
    },
    async (request, reply) => {
      requireTeamAdmin(request);
      const { row, shown } = await webhooks.create(request, request.params.id, request.body);
      return reply.code(201).send({ ...webhookView(row, ctx), ...shown });
    },
  );

  app.get(
    '/webhooks/:uid',
    {
      schema: {
        tags: TAGS,
        summary: 'A webhook (a deleted one too, with state deleted)',
        params: s.WebhookUidParams,
        response: { 200: s.WebhookSchema },
      },
    },
    async (request) => webhookView(await teamWebhook(ctx.db, request.principal.teamId, request.params.uid), ctx),
  );

  app.patch(
    '/webhooks/:uid',
    {
      schema: {
        tags: TAGS,
        summary:
          'Enable, disable or change the delivery ID header of a webhook of a managed factory (team admins); renaming is refused',
        params: s.WebhookUidParams,
        body: s.PatchWebhookBody,
        response: { 200: s.WebhookSchema },
      },
    },
    async (request) => {
      requireTeamAdmin(request);
      return webhookView(await webhooks.patch(request, request.params.uid, request.body), ctx);
    },
  );

  app.delete(
    '/webhooks/:uid',
    {
      schema: {
        tags: TAGS,
        summary:
          'Delete a webhook of a managed factory: senders get 404 at once; history and automations stay (team admins)',
        params: s.WebhookUidParams,
      },
    },
    async (request, reply) => {
      requireTeamAdmin(request);
      await webhooks.delete(request, request.params.uid);
      return reply.code(204).send();
    },
  );

  app.post(
    '/webhooks/:uid/rotate-secret',
    {
      schema: {
        tags: TAGS,
        summary:
          "A new secret, in force at once (the old one stops working); signature webhooks take the provider's new secret (team admins)",
        params: s.WebhookUidParams,
        body: s.RotateSecretBody,
        response: { 200: s.WebhookWithSecretSchema },
      },
      // A bodiless POST (token modes need no input) is an empty object.
      preValidation: async (request) => {
        request.body ??= {};
      },
    },
    async (request) => {
      requireTeamAdmin(request);
      const { row, shown } = await webhooks.rotate(request, request.params.uid, request.body);
      return { ...webhookView(row, ctx), ...shown };
    },
  );
}
