import type { AppInstance, ServiceContext } from '../http/context.ts';
import { AppError } from '../http/errors.ts';
import { parseJsonBody } from '../ingress/json-body.ts';
import * as s from './schemas.ts';
import { testFilter } from './test-filter.ts';
import { automationView, getAutomation, triggerStatuses } from './views.ts';

const TAGS = ['automations'];

export async function registerAutomationReadRoutes(app: AppInstance, ctx: ServiceContext): Promise<void> {
  app.get(
    '/automations/:id',
    {
      schema: {
        tags: TAGS,
        summary: 'An automation, with its webhook triggers and whether it fires (a deleted webhook leaves it visible, not firing)',
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
        summary: "Would this automation fire for a stored delivery? The webhook check and the payload check, with the path of a payload miss",
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
      const res = await ctx.db.query<{ id: string; webhook_uid: string; label: string; payload: Uint8Array | null; duplicate_of: string | null; name: string; deleted: boolean }>(
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
        throw new AppError('invalid_request', `delivery_id: delivery ${deliveryId} was rejected (${delivery.label}) and has no stored payload to test against`);
      }
      const triggers = (await triggerStatuses(ctx.db, automation.id)).map((t) => ({ triggerIndex: t.trigger_index, webhookUid: t.webhook_uid, payload: t.payload_filter }));
      return {
        automation_id: automation.id,
        delivery_id: delivery.id,
        webhook_uid: delivery.webhook_uid,
        ...testFilter({ triggers, delivery: { webhookUid: delivery.webhook_uid, payload: parsed.value }, webhook: { name: delivery.name, deleted: delivery.deleted } }),
      };
    },
  );
}

