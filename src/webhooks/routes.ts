import { Type } from 'typebox';
import type { AppInstance, ServiceContext } from '../http/context.ts';
import { AppError } from '../http/errors.ts';
import { parseJsonBody } from '../ingress/json-body.ts';
import type { Queryable } from '../store/db.ts';
import { firingsOf, getDelivery, getDeliveryPayload, listDeliveries, toDeliveryItem } from './delivery-log.ts';
import * as s from './schemas.ts';

const TAGS = ['webhooks'];

/** The webhook if it is (or was: history outlives a deleted webhook) the caller's team's; else 404. */
export async function teamWebhook(q: Queryable, teamId: string, uid: string): Promise<{ uid: string; team_id: string; deleted_at: Date | null }> {
  const res = await q.query<{ uid: string; team_id: string; deleted_at: Date | null }>('SELECT uid, team_id, deleted_at FROM webhooks WHERE uid = $1', [uid]);
  const row = res.rows[0];
  if (!row || row.team_id !== teamId) throw new AppError('resource_not_found', `webhook ${uid} does not exist`);
  return row;
}

export async function registerDeliveryLogRoutes(app: AppInstance, ctx: ServiceContext): Promise<void> {
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
      const page = await listDeliveries(ctx.db, hook.uid, { limit: request.query.limit ?? 50, cursor: request.query.cursor });
      return {
        deliveries: page.rows.map(toDeliveryItem),
        page_info: { has_next_page: page.nextCursor !== undefined, ...(page.nextCursor ? { next_cursor: page.nextCursor } : {}) },
      };
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
      if (!row) throw new AppError('resource_not_found', `delivery ${request.params.deliveryId} of webhook ${hook.uid} does not exist (or was purged)`);
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
        ...(firings.some((f) => f.error) ? { errors: firings.filter((f) => f.error).map((f) => ({ automation_id: f.automation_id, error: f.error! })) } : {}),
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
        throw new AppError('resource_not_found', `delivery ${request.params.deliveryId} of webhook ${hook.uid} has no stored payload (only accepted deliveries keep theirs)`);
      }
      return reply.type('application/json').send(Buffer.from(stored.payload));
    },
  );
}
