import { hash } from 'node:crypto';
import { header } from './signatures/primitives.ts';
import type { HeaderMap } from './signatures/index.ts';
import type { WebhookRoute } from './routing.ts';

/** The spec's neutral name for the sender-set delivery header ("X-Service-Delivery-Id"). */
export const AGENTYARD_DELIVERY_ID_HEADER = 'x-agentyard-delivery-id';

export type IdentitySource = 'delivery_id_header' | 'provider' | 'agentyard_header' | 'body_sha256';

export interface DeliveryIdentity {
  /** The dedupe key: the sender's ID as given, or `sha256:<hex>` of the body. */
  identity: string;
  source: IdentitySource;
  /** The sender's own ID, when it gave one. */
  senderDeliveryId: string | undefined;
}

/** Longer sender IDs are keyed by their hash (an index entry must stay small); the log keeps them as given, cut. */
const MAX_ID_LENGTH = 200;

function fromSender(value: string, source: IdentitySource): DeliveryIdentity {
  const identity = value.length <= MAX_ID_LENGTH ? value : `id-sha256:${hash('sha256', value, 'hex')}`;
  return { identity, source, senderDeliveryId: value.slice(0, MAX_ID_LENGTH) };
}

/**
 * Delivery identity in the spec's order of preference: (1) the webhook's configured delivery-ID header;
 * (2) for signed webhooks, the provider's own delivery header (as the verified scheme reported it);
 * (3) `X-Agentyard-Delivery-Id`; (4) the SHA-256 of the body, so identical bodies without an ID are duplicates.
 * Sender IDs share one namespace whichever header carried them, so a retry is recognised even if the
 * webhook's configuration changed in between.
 */
export function deliveryIdentity(
  route: WebhookRoute,
  headers: HeaderMap,
  providerDeliveryId: string | undefined,
  rawBody: Buffer,
): DeliveryIdentity {
  const configured = route.deliveryIdHeader ? header(headers, route.deliveryIdHeader) : undefined;
  if (configured !== undefined) return fromSender(configured, 'delivery_id_header');
  if (route.authMode === 'signature' && providerDeliveryId) return fromSender(providerDeliveryId, 'provider');
  return senderOrBodyIdentity(header(headers, AGENTYARD_DELIVERY_ID_HEADER), 'agentyard_header', rawBody);
}

/** The sender's ID `given` (from `source`) as the identity, or the SHA-256 of the body when it gave none. */
export function senderOrBodyIdentity(
  given: string | undefined,
  source: IdentitySource,
  rawBody: Buffer,
): DeliveryIdentity {
  if (given !== undefined) return fromSender(given, source);
  return { identity: `sha256:${hash('sha256', rawBody, 'hex')}`, source: 'body_sha256', senderDeliveryId: undefined };
}

/** Bytes of a dedupe key (deliveryKey). */
export const DELIVERY_KEY_BYTES = 32;

/**
 * The dedupe key of an accepted delivery as the database indexes it (migration 0093): SHA-256 of the webhook's
 * uid (or connection's id), a NUL and the identity, in UTF-8. Equal keys mean the same (uid, identity), as two
 * different ones colliding would mean a SHA-256 collision, the same assumption as the body hash itself.
 * 33 bytes in the index instead of the two texts (≈ 100): a smaller index, fewer pages and less WAL per
 * delivery (docs/performance.md, "Webhook ingress").
 */
export function deliveryKey(webhookUid: string, identity: string): Buffer {
  return hash('sha256', `${webhookUid}\0${identity}`, 'buffer');
}

/** The sender's ID of a rejected delivery, when a header names one (no body hash: the body is not trusted). */
export function claimedDeliveryId(route: WebhookRoute, headers: HeaderMap): string | undefined {
  const value =
    (route.deliveryIdHeader ? header(headers, route.deliveryIdHeader) : undefined) ??
    header(headers, AGENTYARD_DELIVERY_ID_HEADER);
  return value?.slice(0, MAX_ID_LENGTH);
}
