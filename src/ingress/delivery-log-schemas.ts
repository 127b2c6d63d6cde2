/** The delivery log as the API answers it (GET /webhooks/{uid}/deliveries, /integrations/{provider}/deliveries). */
import { Type } from 'typebox';

const Str = Type.String();
const OptStr = Type.Optional(Type.String());
const DateTime = Type.String({ format: 'date-time' });

export const WebhookUidParams = Type.Object({ uid: Type.String({ minLength: 1, maxLength: 64 }) });
export const DeliveryParams = Type.Object({
  uid: Type.String({ minLength: 1, maxLength: 64 }),
  deliveryId: Type.String({ minLength: 1, maxLength: 64 }),
});

export const DeliveryListQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
  cursor: OptStr,
});

const LabelSchema = Type.Union(
  [
    Type.Literal('Accepted'),
    Type.Literal('Duplicate'),
    Type.Literal('Rejected (auth)'),
    Type.Literal('Rejected (invalid JSON)'),
    Type.Literal('Rejected (too large)'),
  ],
  { description: 'The delivery label as the spec names it' },
);
const StatusSchema = Type.Union(
  [
    Type.Literal('accepted'),
    Type.Literal('duplicate'),
    Type.Literal('rejected_auth'),
    Type.Literal('rejected_invalid_json'),
    Type.Literal('rejected_too_large'),
  ],
  { description: 'The label as a code' },
);

export const DeliveryItemSchema = Type.Object({
  delivery_id: Type.String({
    description: 'The ID answered to the sender in the 202 (or in the problem document of a rejection)',
  }),
  webhook_uid: Str,
  label: LabelSchema,
  status: StatusSchema,
  size: Type.Integer({
    description: 'Body size in bytes (for a too-large body: its declared length, or the limit plus one)',
  }),
  received_at: DateTime,
  sender_delivery_id: Type.Optional(
    Type.String({ description: "The sender's own event ID, when a header carried one" }),
  ),
  identity_source: Type.Optional(
    Type.String({
      description: 'What made the dedupe identity: delivery_id_header, provider, agentyard_header or body_sha256',
    }),
  ),
  duplicate_of: Type.Optional(Type.String({ description: 'For a Duplicate: the accepted delivery it repeats' })),
  reason: Type.Optional(Type.String({ description: 'Why it was rejected, as the sender was told' })),
  replay_of: Type.Optional(Type.String({ description: 'For a replay: the accepted delivery it replays' })),
  replayed_by: Type.Optional(
    Type.String({ description: 'For a replay: the ID of the user or service account that asked for it' }),
  ),
  skipped_reasons: Type.Optional(
    Type.Array(Type.String(), {
      description:
        "Why an automation that matched this event started no run: its factory's trigger policy (a connection's log), a daily cap of its factory, agent or automation, or its concurrency key (onNew: skip; docs/governance.md)",
    }),
  ),
});

export const DeliveryListSchema = Type.Object({
  deliveries: Type.Array(DeliveryItemSchema),
  page_info: Type.Object({ has_next_page: Type.Boolean(), next_cursor: OptStr }),
});

export const DeliveryDetailSchema = Type.Object({
  ...DeliveryItemSchema.properties,
  payload: Type.Optional(
    Type.Unknown({
      description: 'The stored JSON body (accepted deliveries only); GET …/payload gives the exact bytes',
    }),
  ),
  evaluation: Type.Optional(
    Type.Union([Type.Literal('pending'), Type.Literal('evaluated')], {
      description: 'Whether the automations have looked at it yet',
    }),
  ),
  evaluated_at: Type.Optional(DateTime),
  runs: Type.Array(Type.Object({ run_id: Str, automation_id: Str }), { description: 'The runs this delivery started' }),
  errors: Type.Optional(
    Type.Array(Type.Object({ automation_id: Str, error: Str }), {
      description: 'Automations whose run could not be created, and why',
    }),
  ),
  skipped: Type.Optional(
    Type.Array(Type.Object({ automation_id: Str, reason: Str }), {
      description:
        "Automations whose trigger matched but whose factory's trigger policy starts no run for who caused the event, and why (docs/governance.md)",
    }),
  ),
});

export const ReplaySchema = Type.Object({
  delivery_id: Type.String({ description: 'The new delivery: the replay, in the outbox, evaluated like any delivery' }),
  replay_of: Str,
});

export const LockoutListSchema = Type.Object({
  lockouts: Type.Array(
    Type.Object({
      sender_ip: Type.String({ description: "The refused sender's address (empty when the ingress saw none)" }),
      until: Type.String({ format: 'date-time', description: 'When its requests are let in again' }),
      reason: Type.String({ description: 'Why, in a sentence' }),
    }),
    { description: 'Newest end first; empty when no sender is locked out' },
  ),
});
