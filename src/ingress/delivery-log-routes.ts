import { Type } from 'typebox';
import type { AppInstance } from '../plugin.ts';
import type { Queryable } from '../kernel/db.ts';
import { AppError } from '../kernel/errors.ts';
import { newId } from '../kernel/ids.ts';
import { requireTeamAdmin } from '../identity/guards.ts';
import {
  countTeamDeliveries,
  deliveryLogPage,
  firingsOf,
  getDelivery,
  getDeliveryPayload,
  toDeliveryItem,
} from './delivery-log.ts';
import * as s from './delivery-log-schemas.ts';
import { parseJsonBody } from './json-body.ts';
import { insertReplay } from './sql.ts';
import type { AuthLockout } from './lockouts.ts';

/**
 * Whose log a caller may read. The webhooks belong to factories/ and the connections to integrations/, which
 * the ingress does not import: the composition root passes their lookups in.
 */
export interface DeliveryLogOwners {
  db: Queryable;
  /** The UID of the team's webhook `uid` (a deleted one too), or resource_not_found. */
  webhookOfTeam(teamId: string, uid: string): Promise<string>;
  /** The ID of the team's connection to `provider`, or the error naming the unknown provider or missing connection. */
  connectionOfTeam(teamId: string, provider: string): Promise<string>;
  /** Tells the outbox evaluators that a delivery is waiting (after a replay's commit). */
  wakeEvaluator(): Promise<void>;
  /** The senders a log (a webhook's UID, a connection's ID) refuses now for failed authentications. */
  lockouts(logUid: string): AuthLockout[];
}

const TAGS = ['webhooks'];

export async function registerDeliveryLogRoutes(app: AppInstance, owners: DeliveryLogOwners): Promise<void> {
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
      const connectionId = await owners.connectionOfTeam(request.principal.teamId, request.params.provider);
      return deliveryLogPage(owners.db, connectionId, request.query, { withSkips: true });
    },
  );

  const lockoutsSummary =
    'The senders refused with 429 now for failed authentications (from memory: the bus announces each lockout to every process)';
  app.get(
    '/webhooks/:uid/lockouts',
    {
      schema: {
        tags: TAGS,
        summary: lockoutsSummary,
        params: s.WebhookUidParams,
        response: { 200: s.LockoutListSchema },
      },
    },
    async (request) => ({
      lockouts: owners.lockouts(await owners.webhookOfTeam(request.principal.teamId, request.params.uid)),
    }),
  );
  app.get(
    '/integrations/:provider/lockouts',
    {
      schema: {
        tags: ['integrations'],
        summary: lockoutsSummary,
        params: Type.Object({ provider: Type.String() }),
        response: { 200: s.LockoutListSchema },
      },
    },
    async (request) => ({
      lockouts: owners.lockouts(await owners.connectionOfTeam(request.principal.teamId, request.params.provider)),
    }),
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
      return { since: since.toISOString(), ...(await countTeamDeliveries(owners.db, request.principal.teamId, since)) };
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
      const uid = await owners.webhookOfTeam(request.principal.teamId, request.params.uid);
      return deliveryLogPage(owners.db, uid, request.query, { withSkips: true });
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
      const uid = await owners.webhookOfTeam(request.principal.teamId, request.params.uid);
      return deliveryDetail(owners.db, uid, `webhook ${uid}`, request.params.deliveryId);
    },
  );

  app.get(
    '/integrations/:provider/deliveries/:deliveryId',
    {
      schema: {
        tags: ['integrations'],
        summary:
          'One delivery of the connection: its log entry, its payload, the runs it started and the automations it skipped, with why',
        params: Type.Object({ provider: Type.String(), deliveryId: Type.String() }),
        response: { 200: s.DeliveryDetailSchema },
      },
    },
    async (request) => {
      const connectionId = await owners.connectionOfTeam(request.principal.teamId, request.params.provider);
      return deliveryDetail(
        owners.db,
        connectionId,
        `the ${request.params.provider} connection`,
        request.params.deliveryId,
      );
    },
  );

  app.post(
    '/webhooks/:uid/deliveries/:deliveryId/replay',
    {
      schema: {
        tags: TAGS,
        summary:
          'Team admin: evaluate an accepted delivery again against the current automations, logged as a new delivery that names the original',
        params: s.DeliveryParams,
        response: { 201: s.ReplaySchema },
      },
    },
    async (request, reply) => {
      requireTeamAdmin(request);
      const uid = await owners.webhookOfTeam(request.principal.teamId, request.params.uid);
      const replay = await replayDelivery(
        owners,
        request.principal.subject.id,
        uid,
        `webhook ${uid}`,
        request.params.deliveryId,
      );
      return reply.code(201).send(replay);
    },
  );

  app.post(
    '/integrations/:provider/deliveries/:deliveryId/replay',
    {
      schema: {
        tags: ['integrations'],
        summary:
          'Team admin: evaluate an accepted provider event again against the current automations, logged as a new delivery that names the original',
        params: Type.Object({ provider: Type.String(), deliveryId: Type.String({ minLength: 1, maxLength: 64 }) }),
        response: { 201: s.ReplaySchema },
      },
    },
    async (request, reply) => {
      requireTeamAdmin(request);
      const { provider, deliveryId } = request.params;
      const connectionId = await owners.connectionOfTeam(request.principal.teamId, provider);
      const replay = await replayDelivery(
        owners,
        request.principal.subject.id,
        connectionId,
        `the ${provider} connection`,
        deliveryId,
      );
      return reply.code(201).send(replay);
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
      const uid = await owners.webhookOfTeam(request.principal.teamId, request.params.uid);
      const stored = await getDeliveryPayload(owners.db, request.params.deliveryId);
      if (!stored || stored.webhook_uid !== uid) {
        throw new AppError(
          'resource_not_found',
          `delivery ${request.params.deliveryId} of webhook ${uid} has no stored payload (only accepted deliveries keep theirs)`,
        );
      }
      return reply.type('application/json').send(Buffer.from(stored.payload));
    },
  );
}

/** One delivery of a log (a webhook's or a connection's), with what its evaluation did. */
async function deliveryDetail(db: Queryable, logUid: string, logName: string, deliveryId: string) {
  const row = await getDelivery(db, logUid, deliveryId);
  if (!row)
    throw new AppError('resource_not_found', `delivery ${deliveryId} of ${logName} does not exist (or was purged)`);
  const item = toDeliveryItem(row);
  if (row.label !== 'accepted') return { ...item, runs: [] };
  const stored = await getDeliveryPayload(db, row.id);
  const firings = await firingsOf(db, row.id);
  const errors = firings.filter((f) => f.error).map((f) => ({ automation_id: f.automation_id, error: f.error! }));
  const skipped = firings.filter((f) => f.skipped).map((f) => ({ automation_id: f.automation_id, reason: f.skipped! }));
  return {
    ...item,
    ...(stored ? { payload: parseJsonBody(stored.payload)?.value ?? null } : {}),
    evaluation: row.outbox_pending ? ('pending' as const) : ('evaluated' as const),
    ...(row.evaluated_at ? { evaluated_at: row.evaluated_at.toISOString() } : {}),
    runs: firings.filter((f) => f.run_id).map((f) => ({ run_id: f.run_id!, automation_id: f.automation_id })),
    ...(errors.length > 0 ? { errors } : {}),
    ...(skipped.length > 0 ? { skipped } : {}),
  };
}

/** Logs a replay of an accepted delivery of a log and wakes the evaluators; the errors name what was wrong. */
async function replayDelivery(
  owners: DeliveryLogOwners,
  replayedBy: string,
  logUid: string,
  logName: string,
  deliveryId: string,
): Promise<{ delivery_id: string; replay_of: string }> {
  const replay = await insertReplay(owners.db, logUid, deliveryId, newId('dlv'), replayedBy);
  if (!replay) {
    const row = await getDelivery(owners.db, logUid, deliveryId);
    if (row?.label === 'accepted')
      throw new AppError(
        'invalid_request',
        `delivery ${deliveryId} of ${logName} has no stored payload left to replay`,
      );
    if (row)
      throw new AppError(
        'invalid_request',
        `delivery ${deliveryId} of ${logName} is ${row.label}: only an accepted delivery can be replayed`,
      );
    throw new AppError('resource_not_found', `delivery ${deliveryId} of ${logName} does not exist (or was purged)`);
  }
  await owners.wakeEvaluator();
  return { delivery_id: replay.id, replay_of: deliveryId };
}
