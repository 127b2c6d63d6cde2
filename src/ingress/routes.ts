import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { sendProblem } from '../http/app.ts';
import type { AppInstance, ServiceContext } from '../http/context.ts';
import { AppError, isAppError } from '../http/errors.ts';
import { newId } from '../util/ids.ts';
import { authenticate } from './authenticate.ts';
import type { DeliveryWriter } from './delivery-writer.ts';
import type { DeliveriesInProgress } from './in-progress.ts';
import { claimedDeliveryId, deliveryIdentity } from './identity.ts';
import { parseJsonBody } from './json-body.ts';
import { WEBHOOK_BODY_LIMIT } from './limits.ts';
import type { IngressLimits } from './limits.ts';
import type { DeliveryInsert, DeliveryLabelCode } from './plans.ts';
import type { IngressLimiters } from './rate-limits.ts';
import type { RoutingSnapshot, WebhookRoute } from './routing.ts';

/** What the ingress learns about a request before its body is read. */
interface IngressState {
  route: WebhookRoute;
  limitKey: string;
  receivedAt: Date;
  contentType: string | undefined;
}

declare module 'fastify' {
  interface FastifyRequest {
    webhookDelivery: IngressState | null;
  }
}

export interface IngressDeps {
  ctx: ServiceContext;
  routing: RoutingSnapshot;
  limiters: IngressLimiters;
  writer: DeliveryWriter;
  limits: IngressLimits;
  inProgress: DeliveriesInProgress;
}

// Every request body reaches the one raw parser under this type, whatever the sender declared (or mangled):
// the spec does not enforce Content-Type.
const RAW_TYPE = 'application/x-agentyard-webhook-body';
const OTHER_METHODS = ['GET', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

// The same answer as for a UID that never existed: a disabled or deleted webhook is not told apart.
const webhookNotFound = () => new AppError('webhook_not_found', 'no enabled webhook has this URL');

function one(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * POST {webhook_base_url}/webhooks/w/{uid}[/{token}], in the order of ARCHITECTURE.md: route → webhook lookup
 * (404) → sender rate limit (429) → failed-auth budget (429) → size (413, enforced while reading) →
 * authentication (401) → JSON (400) → identity → delivery log, committed → 202.
 */
export async function registerIngressRoutes(app: AppInstance, deps: IngressDeps): Promise<void> {
  const { ctx, routing, limiters, writer, limits, inProgress } = deps;

  const logRejected = async (request: FastifyRequest, state: IngressState, label: DeliveryLabelCode, reason: string, size: number): Promise<string> => {
    const id = newId('dlv');
    const senderDeliveryId = claimedDeliveryId(state.route, request.headers);
    await writer.log({ ...baseRow(request, state, id, size), label, reason, senderDeliveryId: senderDeliveryId ?? null });
    return id;
  };

  await app.register(async (scope) => {
    scope.decorateRequest('webhookDelivery', null);
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser(RAW_TYPE, { parseAs: 'buffer', bodyLimit: WEBHOOK_BODY_LIMIT }, (_request, body, done) => done(null, body));

    scope.setErrorHandler(async (err: FastifyError, request, reply) => {
      const state = request.webhookDelivery;
      if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE' && state) {
        const declared = Number(request.headers['content-length']);
        const size = Number.isFinite(declared) && declared > WEBHOOK_BODY_LIMIT ? declared : WEBHOOK_BODY_LIMIT + 1;
        const reason = `the body is larger than ${WEBHOOK_BODY_LIMIT} bytes (256 KB)`;
        const id = await logRejected(request, state, 'rejected_too_large', reason, size);
        return sendProblem(request, reply, new AppError('payload_too_large', reason, { extensions: { delivery_id: id } }));
      }
      if (isAppError(err)) return sendProblem(request, reply, err);
      if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) return sendProblem(request, reply, new AppError('invalid_request', err.message));
      request.log.error({ err }, 'webhook delivery failed');
      return sendProblem(request, reply, new AppError('internal_error', 'the delivery was not recorded; send it again', { cause: err }));
    });

    const onRequest = async (request: FastifyRequest<{ Params: { uid: string; token?: string } }>, reply: FastifyReply): Promise<void> => {
      const receivedAt = new Date();
      inProgress.track(reply.raw);
      const route = routing.get(request.params.uid);
      // A token segment on a webhook that takes none is a wrong URL, as is an unknown UID.
      if (!route || (request.params.token !== undefined && route.authMode !== 'url_token')) {
        throw webhookNotFound();
      }
      const limitKey = `${route.uid}|${request.ip}`;
      const wait = await limiters.consumeDelivery(limitKey);
      if (wait !== undefined) {
        throw new AppError('webhook_rate_limited', `more than ${limits.senderPoints} deliveries per ${limits.senderWindowSeconds} s from this sender; retry in ${wait} s`, {
          headers: { 'retry-after': String(wait) },
        });
      }
      const blocked = limiters.failedAuthBlocked(limitKey);
      if (blocked !== undefined) {
        throw new AppError('webhook_auth_rate_limited', `too many failed authentications from this sender; retry in ${blocked} s`, {
          headers: { 'retry-after': String(blocked) },
        });
      }
      const contentType = one(request.headers['content-type']);
      request.headers['content-type'] = RAW_TYPE;
      request.webhookDelivery = { route, limitKey, receivedAt, contentType };
    };

    const handler = async (request: FastifyRequest<{ Params: { uid: string; token?: string } }>, reply: FastifyReply) => {
      const state = request.webhookDelivery!;
      if (state.contentType === undefined) delete request.headers['content-type'];
      else request.headers['content-type'] = state.contentType;
      const rawBody = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);

      let route = state.route;
      const authRequest = {
        headers: request.headers,
        rawBody,
        urlToken: request.params.token,
        url: `${ctx.config.webhookBaseUrl}${request.url}`,
        now: state.receivedAt,
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
        const id = await logRejected(request, state, 'rejected_auth', auth.reason, rawBody.length);
        throw new AppError('webhook_unauthorized', auth.reason, { extensions: { delivery_id: id } });
      }
      if (parseJsonBody(rawBody) === undefined) {
        const reason = rawBody.length === 0 ? 'the body is empty; send a JSON value' : 'the body is not valid JSON (UTF-8)';
        const id = await logRejected(request, state, 'rejected_invalid_json', reason, rawBody.length);
        throw new AppError('invalid_json', reason, { extensions: { delivery_id: id } });
      }

      const identity = deliveryIdentity(route, request.headers, auth.providerDeliveryId, rawBody);
      const row = {
        ...baseRow(request, state, newId('dlv'), rawBody.length),
        label: 'accepted' as const,
        identity: identity.identity,
        identitySource: identity.source,
        senderDeliveryId: identity.senderDeliveryId ?? null,
        payload: rawBody,
      };
      const result = await writer.accept(row, route.secretVersion);
      switch (result.outcome) {
        case 'accepted':
        case 'duplicate':
          return reply.code(202).send({ delivery_id: result.id });
        case 'gone':
          throw webhookNotFound();
        case 'secret_changed':
          throw new AppError('webhook_unauthorized', 'the webhook secret was rotated while this request was in flight', {
            extensions: { delivery_id: result.id },
          });
      }
    };

    const routeOptions = { bodyLimit: WEBHOOK_BODY_LIMIT, onRequest, schema: { hide: true } };
    scope.post('/webhooks/w/:uid', routeOptions, handler);
    scope.post('/webhooks/w/:uid/:token', routeOptions, handler);
    const methodNotAllowed = async (request: FastifyRequest) => {
      throw new AppError('method_not_allowed', `${request.method} is not allowed; webhooks take POST`, { headers: { allow: 'POST' } });
    };
    for (const url of ['/webhooks/w/:uid', '/webhooks/w/:uid/:token']) {
      // Refused before any body is read.
      scope.route({ method: [...OTHER_METHODS], url, schema: { hide: true }, onRequest: methodNotAllowed, handler: methodNotAllowed });
    }
  });
}

function baseRow(request: FastifyRequest, state: IngressState, id: string, size: number): DeliveryInsert {
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
    senderIp: request.ip,
  };
}
