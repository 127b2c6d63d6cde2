import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AppInstance } from '../plugin.ts';
import type { ServiceContext } from '../context.ts';
import { AppError } from '../kernel/errors.ts';
import { redactedPath } from '../kernel/redact.ts';
import { newId } from '../kernel/ids.ts';
import { authenticate } from './authenticate.ts';
import type { DeliveryWriter } from './delivery-writer.ts';
import type { DeliveriesInProgress } from './in-progress.ts';
import { claimedDeliveryId, deliveryIdentity } from './identity.ts';
import { parseJsonBody } from './json-body.ts';
import { INGRESS_PATH_PREFIX } from './url.ts';
import type { IngressLimits } from './limits.ts';
import { deliveryRow } from './sql.ts';
import type { DeliveryInsert } from './sql.ts';
import {
  admitSender,
  answerAccept,
  deliveryHandler,
  deliveryRoutes,
  readBody,
  refuseInvalidJson,
  refuseTooLarge,
  requirePost,
} from './direct-delivery.ts';
import type { LogRejected } from './direct-delivery.ts';
import type { IngressLimiters } from './rate-limits.ts';
import type { RoutingSnapshot, WebhookRoute } from './routing.ts';

/** What the ingress learns about a request before its body is read. */
interface IngressState {
  route: WebhookRoute;
  limitKey: string;
  receivedAt: Date;
  contentType: string | undefined;
  senderIp: string | null;
}

export interface IngressDeps {
  ctx: ServiceContext;
  routing: RoutingSnapshot;
  limiters: IngressLimiters;
  writer: DeliveryWriter;
  limits: IngressLimits;
  inProgress: DeliveriesInProgress;
}

/** Longer path segments are no webhook's (the API's routes take at most this much too). */
const MAX_SEGMENT_LENGTH = 500;

// The same answer as for a UID that never existed: a disabled or deleted webhook is not told apart.
const webhookNotFound = () => new AppError('webhook_not_found', 'no enabled webhook has this URL');

function one(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** The UID and the token segment of `/webhooks/w/{uid}[/{token}]` (a trailing slash allowed), or undefined. */
export function parseIngressPath(url: string): { uid: string; token: string | undefined } | undefined {
  const query = url.indexOf('?');
  let rest = (query === -1 ? url : url.slice(0, query)).slice(INGRESS_PATH_PREFIX.length);
  if (rest.endsWith('/')) rest = rest.slice(0, -1);
  const segments = rest.split('/');
  if (segments.length > 2) return undefined;
  const decoded: string[] = [];
  for (const segment of segments) {
    if (segment === '' || segment.length > MAX_SEGMENT_LENGTH) return undefined;
    try {
      decoded.push(segment.includes('%') ? decodeURIComponent(segment) : segment);
    } catch {
      return undefined;
    }
  }
  return { uid: decoded[0]!, token: decoded[1] };
}

/**
 * POST {webhook_base_url}/webhooks/w/{uid}[/{token}], in the order of docs/ingress.md ("What happens to a POST, in order"): route → webhook lookup
 * (404) → sender rate limit (429) → failed-auth budget (429) → size (413, enforced while reading) →
 * authentication (401) → JSON (400) → identity → delivery log, committed → 202. Served from node:http, not
 * Fastify (src/http/direct-routes.ts); errors are the same problem documents as the API's.
 */
export async function registerIngressRoutes(
  app: AppInstance,
  deps: IngressDeps,
  options: { throughFastify?: boolean | undefined } = {},
): Promise<void> {
  const messages = { failure: 'webhook delivery failed', retry: 'the delivery was not recorded; send it again' };
  const urls = ['/webhooks/w/:uid', '/webhooks/w/:uid/:token'];
  const handler = deliveryHandler(deps.ctx.log, messages, (request, response) =>
    serveDelivery(deps, request, response),
  );
  if (options.throughFastify) await registerFastifyRoutes(app, urls, handler);
  else app.addDirectRoute(INGRESS_PATH_PREFIX, deliveryRoutes(urls), handler);
}

/**
 * The same handler behind Fastify's router, hooks and request objects (measured against the direct path by
 * bench/ingress-plugin.ts). The body stays unread for the handler, which applies the webhook limit itself.
 */
async function registerFastifyRoutes(
  app: AppInstance,
  urls: readonly string[],
  handler: (request: IncomingMessage, response: ServerResponse) => void,
): Promise<void> {
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));
    for (const route of deliveryRoutes(urls)) {
      scope.route({
        method: route.methods,
        url: route.url,
        // the handler refuses a body over the webhook limit itself, after logging it
        bodyLimit: 2 ** 31 - 1,
        handler(request, reply) {
          reply.hijack();
          handler(request.raw, reply.raw);
        },
      });
    }
  });
}

async function serveDelivery(deps: IngressDeps, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const { ctx, routing, limiters, writer, limits, inProgress } = deps;
  const receivedAt = new Date();
  inProgress.track(response);
  const url = request.url ?? '/';
  const target = parseIngressPath(url);
  if (!target) throw new AppError('route_not_found', `${request.method ?? ''} ${redactedPath(url)}`);
  requirePost(request, 'webhooks');
  let route = routing.get(target.uid) ?? (await routing.lookUpUnknown(target.uid));
  // A token segment on a webhook that takes none is a wrong URL, as is an unknown UID.
  if (!route || (target.token !== undefined && route.authMode !== 'url_token')) throw webhookNotFound();

  const senderIp = request.socket.remoteAddress ?? null;
  const limitKey = `${route.uid}|${senderIp ?? ''}`;
  await admitSender(limiters, limits, limitKey, 'deliveries');
  const state: IngressState = {
    route,
    limitKey,
    receivedAt,
    contentType: one(request.headers['content-type']),
    senderIp,
  };
  const logRejected: LogRejected = async (label, reason, size) => {
    const id = newId('dlv');
    const senderDeliveryId = claimedDeliveryId(state.route, request.headers);
    await writer.log({
      ...baseRow(request, state, id, size),
      label,
      reason,
      senderDeliveryId: senderDeliveryId ?? null,
    });
    return id;
  };

  const read = await readBody(request);
  const body = Buffer.isBuffer(read) ? read : await refuseTooLarge(read, logRejected);

  const authRequest = {
    headers: request.headers,
    rawBody: body,
    urlToken: target.token,
    url: `${ctx.config.webhookBaseUrl}${url}`,
    now: receivedAt,
  };
  let auth = authenticate(route, authRequest);
  if (!auth.ok) {
    // The webhook may have changed a moment ago (a rotation, a delete through another process or an apply
    // whose notice has not arrived yet): look once at the database before refusing.
    const fresh = await routing.recheck(route.uid);
    if (!fresh) throw webhookNotFound();
    if (fresh.secretVersion !== route.secretVersion) {
      route = fresh;
      state.route = fresh;
      auth = authenticate(route, authRequest);
    }
  }
  if (!auth.ok) {
    await limiters.spendFailedAuth(state.limitKey);
    const id = await logRejected('rejected_auth', auth.reason, body.length);
    throw new AppError('webhook_unauthorized', auth.reason, { extensions: { delivery_id: id } });
  }
  if (parseJsonBody(body) === undefined) await refuseInvalidJson(body, logRejected);

  const identity = deliveryIdentity(route, request.headers, auth.providerDeliveryId, body);
  const row = {
    ...baseRow(request, state, newId('dlv'), body.length),
    label: 'accepted' as const,
    identity: identity.identity,
    identitySource: identity.source,
    senderDeliveryId: identity.senderDeliveryId ?? null,
    payload: body,
  };
  const result = await writer.accept(row, route.secretVersion);
  answerAccept(response, result, webhookNotFound, 'the webhook secret was rotated while this request was in flight');
}

function baseRow(request: IncomingMessage, state: IngressState, id: string, size: number): DeliveryInsert {
  const headers: Record<string, string> = {};
  if (state.contentType !== undefined) headers['content-type'] = state.contentType.slice(0, 200);
  const userAgent = one(request.headers['user-agent']);
  if (userAgent !== undefined) headers['user-agent'] = userAgent.slice(0, 200);
  const { route, receivedAt, senderIp } = state;
  const at = { webhookUid: route.uid, teamId: route.teamId, factoryId: route.factoryId, webhookName: route.name };
  return deliveryRow({ id, ...at, size, receivedAt, headers, senderIp });
}
