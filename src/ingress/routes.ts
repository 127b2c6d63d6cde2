import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AppInstance } from '../plugin.ts';
import type { ServiceContext } from '../context.ts';
import { traceIdOf } from '../kernel/trace.ts';
import { logDirectRequest, sendDirect, sendDirectProblem } from './direct-reply.ts';
import { AppError, isAppError } from '../kernel/errors.ts';
import { redactedPath } from '../kernel/redact.ts';
import { newId } from '../kernel/ids.ts';
import { authenticate } from './authenticate.ts';
import type { DeliveryWriter } from './delivery-writer.ts';
import type { DeliveriesInProgress } from './in-progress.ts';
import { claimedDeliveryId, deliveryIdentity } from './identity.ts';
import { parseJsonBody } from './json-body.ts';
import { WEBHOOK_BODY_LIMIT } from './limits.ts';
import type { IngressLimits } from './limits.ts';
import type { DeliveryInsert, DeliveryLabelCode } from './sql.ts';
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

const PREFIX = '/webhooks/w/';
/** As the route table lists them: POST is served, the other methods answer 405. */
const ROUTES = ['/webhooks/w/:uid', '/webhooks/w/:uid/:token'].map((url) => ({
  methods: ['POST', 'GET', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
  url,
}));
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
  let rest = (query === -1 ? url : url.slice(0, query)).slice(PREFIX.length);
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

/** The largest size the delivery log records (its `size` column is a 32-bit integer). */
const MAX_LOGGED_SIZE = 2 ** 31 - 1;

/** The body, or the size to log when it is over the limit: a declared length is refused before reading. */
export function readBody(request: IncomingMessage): Promise<Buffer | { tooLarge: number }> {
  const declared = Number(request.headers['content-length']);
  if (declared > WEBHOOK_BODY_LIMIT) return Promise.resolve({ tooLarge: Math.min(declared, MAX_LOGGED_SIZE) });
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = () => {
      request.off('data', onData);
      request.off('end', onEnd);
      request.off('error', onError);
      request.off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > WEBHOOK_BODY_LIMIT) {
        stop();
        resolve({ tooLarge: WEBHOOK_BODY_LIMIT + 1 });
      } else {
        chunks.push(chunk);
      }
    };
    const onEnd = () => {
      stop();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onError = (err: Error) => {
      stop();
      reject(err);
    };
    const onClose = () => {
      if (request.complete) return;
      stop();
      reject(new Error('the sender closed the connection before the body ended'));
    };
    request.on('data', onData);
    request.on('end', onEnd);
    request.on('error', onError);
    request.on('close', onClose);
  });
}

/**
 * POST {webhook_base_url}/webhooks/w/{uid}[/{token}], in the order of ARCHITECTURE.md: route → webhook lookup
 * (404) → sender rate limit (429) → failed-auth budget (429) → size (413, enforced while reading) →
 * authentication (401) → JSON (400) → identity → delivery log, committed → 202. Served from node:http, not
 * Fastify (src/http/direct-routes.ts); errors are the same problem documents as the API's.
 */
export function registerIngressRoutes(app: AppInstance, deps: IngressDeps): void {
  const { ctx } = deps;
  app.addDirectRoute(PREFIX, ROUTES, (request, response) => {
    // Made only when something shows it (an error, the info-level access log): a 202 names no trace.
    let traceId: string | undefined;
    const trace = () => (traceId ??= traceIdOf(request));
    logDirectRequest(ctx.log, request, response, trace);
    serveDelivery(deps, request, response).catch((err: unknown) => {
      if (isAppError(err)) {
        // A refused body may still be arriving: the connection cannot be reused after it.
        const close: Record<string, string> = err.code === 'payload_too_large' ? { connection: 'close' } : {};
        sendDirectProblem(request, response, err, trace(), close);
        return;
      }
      ctx.log.error({ err, reqId: trace() }, 'webhook delivery failed');
      sendDirectProblem(
        request,
        response,
        new AppError('internal_error', 'the delivery was not recorded; send it again', { cause: err }),
        trace(),
      );
    });
  });
}

async function serveDelivery(deps: IngressDeps, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const { ctx, routing, limiters, writer, limits, inProgress } = deps;
  const receivedAt = new Date();
  inProgress.track(response);
  const url = request.url ?? '/';
  const target = parseIngressPath(url);
  if (!target) throw new AppError('route_not_found', `${request.method ?? ''} ${redactedPath(url)}`);
  if (request.method !== 'POST') {
    throw new AppError('method_not_allowed', `${request.method ?? ''} is not allowed; webhooks take POST`, {
      headers: { allow: 'POST' },
    });
  }
  let route = routing.get(target.uid);
  // A token segment on a webhook that takes none is a wrong URL, as is an unknown UID.
  if (!route || (target.token !== undefined && route.authMode !== 'url_token')) throw webhookNotFound();

  const senderIp = request.socket.remoteAddress ?? null;
  const limitKey = `${route.uid}|${senderIp ?? ''}`;
  const wait = await limiters.consumeDelivery(limitKey);
  if (wait !== undefined) {
    throw new AppError(
      'webhook_rate_limited',
      `more than ${limits.senderPoints} deliveries per ${limits.senderWindowSeconds} s from this sender; retry in ${wait} s`,
      {
        headers: { 'retry-after': String(wait) },
      },
    );
  }
  const blocked = limiters.failedAuthBlocked(limitKey);
  if (blocked !== undefined) {
    throw new AppError(
      'webhook_auth_rate_limited',
      `too many failed authentications from this sender; retry in ${blocked} s`,
      {
        headers: { 'retry-after': String(blocked) },
      },
    );
  }
  const state: IngressState = {
    route,
    limitKey,
    receivedAt,
    contentType: one(request.headers['content-type']),
    senderIp,
  };
  const logRejected = async (label: DeliveryLabelCode, reason: string, size: number): Promise<string> => {
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

  const body = await readBody(request);
  if (!Buffer.isBuffer(body)) {
    const reason = `the body is larger than ${WEBHOOK_BODY_LIMIT} bytes (256 KB)`;
    const id = await logRejected('rejected_too_large', reason, body.tooLarge);
    throw new AppError('payload_too_large', reason, { extensions: { delivery_id: id } });
  }

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
  if (parseJsonBody(body) === undefined) {
    const reason = body.length === 0 ? 'the body is empty; send a JSON value' : 'the body is not valid JSON (UTF-8)';
    const id = await logRejected('rejected_invalid_json', reason, body.length);
    throw new AppError('invalid_json', reason, { extensions: { delivery_id: id } });
  }

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
  switch (result.outcome) {
    case 'accepted':
    case 'duplicate':
      sendDirect(
        response,
        202,
        { 'content-type': 'application/json; charset=utf-8' },
        JSON.stringify({ delivery_id: result.id }),
      );
      return;
    case 'gone':
      throw webhookNotFound();
    case 'secret_changed':
      throw new AppError('webhook_unauthorized', 'the webhook secret was rotated while this request was in flight', {
        extensions: { delivery_id: result.id },
      });
  }
}

function baseRow(request: IncomingMessage, state: IngressState, id: string, size: number): DeliveryInsert {
  const headers: Record<string, string> = {};
  if (state.contentType !== undefined) headers['content-type'] = state.contentType.slice(0, 200);
  const userAgent = one(request.headers['user-agent']);
  if (userAgent !== undefined) headers['user-agent'] = userAgent.slice(0, 200);
  return {
    id,
    webhookUid: state.route.uid,
    teamId: state.route.teamId,
    factoryId: state.route.factoryId,
    webhookName: state.route.name,
    label: 'accepted',
    identity: null,
    identitySource: null,
    senderDeliveryId: null,
    duplicateOf: null,
    size,
    receivedAt: state.receivedAt,
    payload: null,
    headers,
    reason: null,
    senderIp: state.senderIp,
  };
}
