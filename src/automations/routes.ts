import { requireTeamAdmin } from '../identity/guards.ts';
import type { AppInstance } from '../plugin.ts';
import type { ServiceContext } from '../context.ts';
import type { ManagedFactoryContext } from '../factories/managed-change.ts';
import { teamFactory } from '../factories/managed-change.ts';
import { FactoryIdParams } from '../factories/schemas.ts';
import * as factorySql from '../factories/apply/sql.ts';
import { Type } from 'typebox';
import { AppError } from '../kernel/errors.ts';
import { parseJsonBody } from '../ingress/json-body.ts';
import { AutomationManagement } from './management.ts';
import * as s from './schemas.ts';
import { testFilter } from './test-filter.ts';
import { testProviderDelivery } from './provider-test.ts';
import { EVENT_HEADER } from './provider-runs.ts';
import { connectionDelivery, teamProviderTriggers } from './sql.ts';
import { providerEvents } from '../definitions/provider-events.ts';
import { providerOf, teamConnection } from '../integrations/lookup.ts';
import { automationView, automationViews, getAutomation, triggerStatuses } from './views.ts';

const TAGS = ['automations'];

export async function registerAutomationReadRoutes(app: AppInstance, ctx: ServiceContext): Promise<void> {
  app.get(
    '/factories/:id/automations',
    {
      schema: {
        tags: ['factories'],
        summary:
          "The factory's live automations, each as GET /automations/{id} shows it (webhook triggers, whether it fires)",
        params: FactoryIdParams,
        response: { 200: Type.Object({ automations: Type.Array(s.AutomationSchema) }) },
      },
    },
    async (request) => {
      const factory = await teamFactory(ctx, request.principal.teamId, request.params.id);
      return {
        automations: await automationViews(ctx.db, await factorySql.listFactoryAutomations(ctx.db, factory.id)),
      };
    },
  );

  app.get(
    '/automations/:id',
    {
      schema: {
        tags: TAGS,
        summary:
          'An automation, with its webhook triggers and whether it fires (a deleted webhook leaves it visible, not firing)',
        params: s.AutomationIdParams,
        response: { 200: s.AutomationSchema },
      },
    },
    async (request) => {
      const row = await getAutomation(ctx.db, request.principal.teamId, request.params.id);
      if (!row) throw new AppError('resource_not_found', `automation ${request.params.id} does not exist`);
      return automationView(row, await triggerStatuses(ctx.db, row.id));
    },
  );

  app.post(
    '/automations/:id/test-filter',
    {
      schema: {
        tags: TAGS,
        summary:
          'Would this automation fire for a stored delivery? The webhook check and the payload check, with the path of a payload miss',
        params: s.AutomationIdParams,
        body: s.TestFilterBody,
        response: { 200: s.TestFilterResultSchema },
      },
    },
    async (request) => {
      const { teamId } = request.principal;
      const automation = await getAutomation(ctx.db, teamId, request.params.id);
      if (!automation) throw new AppError('resource_not_found', `automation ${request.params.id} does not exist`);
      const deliveryId = request.body.delivery_id;
      const res = await ctx.db.query<{
        id: string;
        webhook_uid: string;
        label: string;
        payload: Uint8Array | null;
        duplicate_of: string | null;
        name: string;
        deleted: boolean;
      }>(
        `SELECT d.id, d.webhook_uid, d.label, COALESCE(d.payload, o.payload) AS payload, d.duplicate_of,
                COALESCE(w.name, d.webhook_name) AS name, (w.uid IS NULL OR w.deleted_at IS NOT NULL) AS deleted
           FROM webhook_deliveries d
           LEFT JOIN webhook_deliveries o ON o.id = d.duplicate_of
           LEFT JOIN webhooks w ON w.uid = d.webhook_uid
          WHERE d.id = $1 AND d.team_id = $2`,
        [deliveryId, teamId],
      );
      const delivery = res.rows[0];
      if (!delivery) throw new AppError('resource_not_found', `delivery ${deliveryId} does not exist (or was purged)`);
      const parsed = delivery.payload ? parseJsonBody(delivery.payload) : undefined;
      if (!parsed) {
        throw new AppError(
          'invalid_request',
          `delivery_id: delivery ${deliveryId} was rejected (${delivery.label}) and has no stored payload to test against`,
        );
      }
      const triggers = (await triggerStatuses(ctx.db, automation.id)).map((t) => ({
        triggerIndex: t.trigger_index,
        webhookUid: t.webhook_uid,
        payload: t.payload_filter,
      }));
      return {
        automation_id: automation.id,
        delivery_id: delivery.id,
        webhook_uid: delivery.webhook_uid,
        ...testFilter({
          triggers,
          delivery: { webhookUid: delivery.webhook_uid, payload: parsed.value },
          webhook: { name: delivery.name, deleted: delivery.deleted },
        }),
      };
    },
  );
}

/** GET /integrations/{provider}/deliveries/{id}/automations: a provider delivery against the automations now. */
export async function registerProviderTestRoute(app: AppInstance, ctx: ServiceContext): Promise<void> {
  app.get(
    '/integrations/:provider/deliveries/:deliveryId/automations',
    {
      schema: {
        tags: ['integrations'],
        summary:
          "Would each of the team's automations with a trigger of this provider start a run for this stored delivery now? The event check, the filter check with the key that failed, the trigger policy",
        params: Type.Object({
          provider: Type.String(),
          deliveryId: Type.String({ minLength: 1, maxLength: 64 }),
        }),
        response: { 200: s.ProviderTestSchema },
      },
    },
    async (request) => {
      const { teamId } = request.principal;
      const provider = providerOf(request.params.provider);
      const connection = await teamConnection(ctx, teamId, provider);
      const { deliveryId } = request.params;
      const delivery = await connectionDelivery(ctx.db, teamId, connection.id, deliveryId);
      if (!delivery)
        throw new AppError(
          'resource_not_found',
          `delivery ${deliveryId} of the ${provider} connection does not exist (or was purged)`,
        );
      const parsed = delivery.payload ? parseJsonBody(delivery.payload) : undefined;
      if (!parsed)
        throw new AppError(
          'invalid_request',
          `deliveryId: delivery ${deliveryId} was rejected (${delivery.label}) and has no stored payload to test against`,
        );
      const header = EVENT_HEADER[provider];
      const derived = providerEvents(provider, header ? delivery.headers[header] : undefined, parsed.value);
      return {
        delivery_id: delivery.id,
        provider,
        events: [...new Set(derived.events.map((e) => e.event))],
        automations: testProviderDelivery(provider, await teamProviderTriggers(ctx.db, teamId, provider), derived),
      };
    },
  );
}

export async function registerAutomationManagementRoutes(app: AppInstance, ctx: ManagedFactoryContext): Promise<void> {
  const automations = new AutomationManagement(ctx);
  const view = async (row: Awaited<ReturnType<AutomationManagement['create']>>) =>
    automationView(row, await triggerStatuses(ctx.db, row.id));

  app.post(
    '/factories/:id/automations',
    {
      schema: {
        tags: TAGS,
        summary:
          'Create an automation on a managed factory: the file automations/<name>/automation.md, committed and applied (team admins)',
        params: s.FactoryIdParams,
        body: s.CreateAutomationBody,
        response: { 201: s.AutomationSchema },
      },
    },
    async (request, reply) => {
      requireTeamAdmin(request);
      return reply.code(201).send(await view(await automations.create(request, request.params.id, request.body)));
    },
  );

  app.patch(
    '/automations/:id',
    {
      schema: {
        tags: TAGS,
        summary:
          'Change an automation of a managed factory (prompt, enabled, agent, triggers, settings) as a change of its file (team admins)',
        params: s.AutomationIdParams,
        body: s.PatchAutomationBody,
        response: { 200: s.AutomationSchema },
      },
    },
    async (request) => {
      requireTeamAdmin(request);
      return view(await automations.patch(request, request.params.id, request.body));
    },
  );

  app.delete(
    '/automations/:id',
    {
      schema: {
        tags: TAGS,
        summary: 'Delete an automation of a managed factory: its file is removed (team admins)',
        params: s.AutomationIdParams,
      },
    },
    async (request, reply) => {
      requireTeamAdmin(request);
      await automations.delete(request, request.params.id);
      return reply.code(204).send();
    },
  );
}
