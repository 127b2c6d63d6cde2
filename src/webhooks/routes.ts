import type { AppInstance } from '../plugin.ts';
import type { ServiceContext } from '../context.ts';
import type { ManagedFactoryContext } from './managed-change.ts';
import { teamFactory } from './managed-change.ts';
import { FactoryIdParams, WebhookSchema } from '../factories/schemas.ts';
import * as factorySql from '../factories/apply/sql.ts';
import { AppError } from '../kernel/errors.ts';
import { parseJsonBody } from '../ingress/json-body.ts';
import {
  countTeamDeliveries,
  firingsOf,
  getDelivery,
  getDeliveryPayload,
  deliveryLogPage,
  toDeliveryItem,
} from './delivery-log.ts';
import { webhookView as factoryWebhookView } from './views.ts';
import { requireTeamAdmin } from '../identity/guards.ts';
import type { WebhookRow } from '../factories/apply/model.ts';
import { type WebhookManagement, teamWebhook } from './management.ts';
import * as s from './schemas.ts';
import { providerOf, teamConnection } from '../integrations/lookup.ts';
import { Type } from 'typebox';

const TAGS = ['webhooks'];

export async function registerDeliveryLogRoutes(app: AppInstance, ctx: ServiceContext): Promise<void> {
  // A provider connection's delivery log: the same rows, keyed by the connection (docs/integrations.md).
  app.get(
    '/integrations/:provider/deliveries',
    {
      schema: {
        tags: ['integrations'],
        summary: "The connection's delivery log, newest first",
        params: Type.Object({ provider: Type.String() }),
        querystring: s.DeliveryListQuery,
        response: { 200: s.DeliveryListSchema },
      },
    },
    async (request) => {
      const row = await teamConnection(ctx, request.principal.teamId, providerOf(request.params.provider));
      return deliveryLogPage(ctx.db, row.id, request.query);
    },
  );

  app.get(
    '/delivery-stats',
    {
      schema: {
        tags: TAGS,
        summary: "Deliveries to the team's webhooks in the last minutes (60 by default): all, accepted, rejected",
        querystring: Type.Object({
          minutes: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_080, default: 60 })),
        }),
        response: {
          200: Type.Object({
            since: Type.String({ format: 'date-time' }),
            deliveries: Type.Integer(),
            accepted: Type.Integer(),
            rejected: Type.Integer(),
          }),
        },
      },
    },
    async (request) => {
      const since = new Date(Date.now() - (request.query.minutes ?? 60) * 60_000);
      return { since: since.toISOString(), ...(await countTeamDeliveries(ctx.db, request.principal.teamId, since)) };
    },
  );

  app.get(
    '/webhooks/:uid/deliveries',
    {
      schema: {
        tags: TAGS,
        summary: "The webhook's delivery log, newest first (label, delivery ID, size, time)",
        params: s.WebhookUidParams,
        querystring: s.DeliveryListQuery,
        response: { 200: s.DeliveryListSchema },
      },
    },
    async (request) => {
      const hook = await teamWebhook(ctx.db, request.principal.teamId, request.params.uid);
      return deliveryLogPage(ctx.db, hook.uid, request.query);
    },
  );

  app.get(
    '/webhooks/:uid/deliveries/:deliveryId',
    {
      schema: {
        tags: TAGS,
        summary: 'One delivery: its log entry, its stored payload (accepted deliveries only) and the runs it started',
        params: s.DeliveryParams,
        response: { 200: s.DeliveryDetailSchema },
      },
    },
    async (request) => {
      const hook = await teamWebhook(ctx.db, request.principal.teamId, request.params.uid);
      const row = await getDelivery(ctx.db, hook.uid, request.params.deliveryId);
      if (!row)
        throw new AppError(
          'resource_not_found',
          `delivery ${request.params.deliveryId} of webhook ${hook.uid} does not exist (or was purged)`,
        );
      const item = toDeliveryItem(row);
      if (row.label !== 'accepted') return { ...item, runs: [] };
      const stored = await getDeliveryPayload(ctx.db, row.id);
      const firings = await firingsOf(ctx.db, row.id);
      return {
        ...item,
        ...(stored ? { payload: parseJsonBody(stored.payload)?.value ?? null } : {}),
        evaluation: row.outbox_pending ? ('pending' as const) : ('evaluated' as const),
        ...(row.evaluated_at ? { evaluated_at: row.evaluated_at.toISOString() } : {}),
        runs: firings.filter((f) => f.run_id).map((f) => ({ run_id: f.run_id!, automation_id: f.automation_id })),
        ...(firings.some((f) => f.error)
          ? { errors: firings.filter((f) => f.error).map((f) => ({ automation_id: f.automation_id, error: f.error! })) }
          : {}),
      };
    },
  );

  app.get(
    '/webhooks/:uid/deliveries/:deliveryId/payload',
    {
      schema: {
        tags: TAGS,
        summary: 'The stored body of an accepted delivery, byte for byte as the sender sent it',
        params: s.DeliveryParams,
        produces: ['application/json'],
      },
    },
    async (request, reply) => {
      const hook = await teamWebhook(ctx.db, request.principal.teamId, request.params.uid);
      const stored = await getDeliveryPayload(ctx.db, request.params.deliveryId);
      if (!stored || stored.webhook_uid !== hook.uid) {
        throw new AppError(
          'resource_not_found',
          `delivery ${request.params.deliveryId} of webhook ${hook.uid} has no stored payload (only accepted deliveries keep theirs)`,
        );
      }
      return reply.type('application/json').send(Buffer.from(stored.payload));
    },
  );
}

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
