/**
 * POST {webhook_base_url}/integrations/{github|slack|linear}/events/{connection id}: a provider's event, in the
 * ingress's order: connection lookup (404) → the sender's failed-auth budget (429) → size (413) → the
 * provider's signature (401; stale timestamps refused) → the connection's event budget (429) → JSON (400) →
 * identity → delivery log and outbox, committed → 202. Slack's `url_verification` handshake is answered (200, the challenge) once signed, not stored.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AppInstance } from '../plugin.ts';
import type { ServiceContext } from '../context.ts';
import { sendDirect } from '../ingress/direct-reply.ts';
import { AppError } from '../kernel/errors.ts';
import { redactedPath } from '../kernel/redact.ts';
import type { IngressRuntime } from '../ingress/runtime.ts';
import { parseJsonBody } from '../ingress/json-body.ts';
import type { IngressLimits } from '../ingress/limits.ts';
import { deliveryRow } from '../ingress/sql.ts';
import type { DeliveryInsert } from '../ingress/sql.ts';
import * as delivery from '../ingress/direct-delivery.ts';
import { senderOrBodyIdentity } from '../ingress/identity.ts';
import { getSignatureScheme } from '../ingress/signatures/index.ts';
import { header } from '../ingress/signatures/primitives.ts';
import { newId } from '../kernel/ids.ts';
import type { ConnectionCache, LiveConnection } from './connections.ts';
import { isProvider, SIGNATURE_SCHEME_OF } from './model.ts';
import type { Provider } from './model.ts';
import { recordLastError } from './sql.ts';

/** The headers kept with a provider delivery: what the evaluator needs (the event type) and harmless metadata. */
const KEPT_HEADERS: Record<Provider, readonly string[]> = {
  github: ['x-github-event', 'x-github-hook-installation-target-id'],
  slack: ['x-slack-retry-num', 'x-slack-retry-reason'],
  linear: ['linear-event'],
};

const connectionNotFound = () => new AppError('webhook_not_found', 'no integration connection has this URL');

export function parseEventsPath(url: string): { provider: Provider; connectionId: string } | undefined {
  const query = url.indexOf('?');
  const path = (query === -1 ? url : url.slice(0, query)).replace(/\/$/, '');
  const match = /^\/integrations\/([a-z]+)\/events\/([A-Za-z0-9_-]{1,100})$/.exec(path);
  if (!match || !isProvider(match[1]!)) return undefined;
  return { provider: match[1], connectionId: match[2]! };
}

export interface EventsRouteDeps {
  ctx: ServiceContext;
  ingress: IngressRuntime;
  limits: IngressLimits;
  connections: ConnectionCache;
}

export function registerProviderEventRoutes(app: AppInstance, deps: EventsRouteDeps): void {
  const messages = { failure: 'provider event failed', retry: 'the event was not recorded; send it again' };
  app.addDirectRoute(
    '/integrations/',
    delivery.deliveryRoutes(['/integrations/:provider/events/:connection']),
    delivery.deliveryHandler(deps.ctx.log, messages, (request, response) => serveEvent(deps, request, response)),
  );
}

/** The provider's own identity of a delivery: GitHub's and Linear's delivery header, Slack's `event_id`. */
function providerIdentity(provider: Provider, request: IncomingMessage, body: unknown): string | undefined {
  if (provider === 'github') return header(request.headers, 'x-github-delivery');
  if (provider === 'linear') return header(request.headers, 'linear-delivery');
  const eventId = (body as { event_id?: unknown } | null)?.event_id;
  return typeof eventId === 'string' && eventId !== '' ? eventId : undefined;
}

async function serveEvent(deps: EventsRouteDeps, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const { ctx, ingress, limits, connections } = deps;
  const receivedAt = new Date();
  ingress.inProgress.track(response);
  const url = request.url ?? '/';
  const target = parseEventsPath(url);
  if (!target) throw new AppError('route_not_found', `${request.method ?? ''} ${redactedPath(url)}`);
  delivery.requirePost(request, 'provider events');
  let connection = await connections.get(target.connectionId);
  if (!connection || connection.provider !== target.provider) throw connectionNotFound();

  const senderIp = request.socket.remoteAddress ?? null;
  // Failed authentications are counted per (connection, sender IP); the event budget per connection, once the
  // signature checks out, so that nobody without the secret can spend a provider's budget.
  const limitKey = `${connection.id}|${senderIp ?? ''}`;
  delivery.refuseBlockedSender(ingress.limiters, limitKey);
  const base = (id: string, size: number, conn: LiveConnection): DeliveryInsert => {
    const at = { webhookUid: conn.id, teamId: conn.teamId, factoryId: '', webhookName: conn.provider };
    const headers = keptHeaders(conn.provider, request);
    return deliveryRow({ id, ...at, size, receivedAt, headers, senderIp, provider: conn.provider });
  };
  const logRejected: delivery.LogRejected = async (label, reason, size) => {
    const id = newId('dlv');
    await ingress.writer.log({ ...base(id, size, connection!), label, reason });
    return id;
  };

  const read = await delivery.readBody(request);
  // Unauthenticated, like a bad signature: a sender flooding a connection with them is refused soon.
  if (!Buffer.isBuffer(read)) await ingress.limiters.spendFailedAuth(limitKey);
  const body = Buffer.isBuffer(read) ? read : await delivery.refuseTooLarge(read, logRejected);

  const scheme = getSignatureScheme(SIGNATURE_SCHEME_OF[connection.provider])!;
  const verify = (conn: LiveConnection) =>
    conn.secret === null
      ? ({ ok: false, message: 'the managed secret this connection names is missing or empty' } as const)
      : scheme.verify({
          rawBody: body,
          headers: request.headers,
          secret: conn.secret,
          url: `${ctx.config.webhookBaseUrl}${url}`,
          now: receivedAt,
        });
  let verified = verify(connection);
  if (!verified.ok) {
    // The secret or the connection may have changed a moment ago in another process: look once more.
    const again = await connections.get(connection.id, true);
    if (!again || again.provider !== target.provider) throw connectionNotFound();
    connection = again;
    verified = verify(connection);
  }
  if (!verified.ok) {
    await ingress.limiters.spendFailedAuth(limitKey);
    const id = await logRejected('rejected_auth', verified.message, body.length);
    void recordLastError(ctx.db, connection.id, `rejected delivery ${id}: ${verified.message}`).catch(() => {});
    throw new AppError('webhook_unauthorized', verified.message, { extensions: { delivery_id: id } });
  }
  const wait = await ingress.providerEvents.consume(connection.id);
  if (wait !== undefined) {
    throw new AppError(
      'webhook_rate_limited',
      `more than ${limits.providerEventPoints} events per ${limits.providerEventWindowSeconds} s for this connection; retry in ${wait} s`,
      { headers: { 'retry-after': String(wait) } },
    );
  }
  const refusedConnection = connection;
  const parsed =
    parseJsonBody(body) ??
    (await delivery.refuseInvalidJson(body, logRejected, (id, reason) => {
      void recordLastError(ctx.db, refusedConnection.id, `rejected delivery ${id}: ${reason}`).catch(() => {});
    }));
  const value = parsed.value as { type?: unknown; challenge?: unknown } | null;
  if (connection.provider === 'slack' && value?.type === 'url_verification') {
    const challenge = typeof value.challenge === 'string' ? value.challenge : '';
    sendDirect(response, 200, { 'content-type': 'application/json; charset=utf-8' }, JSON.stringify({ challenge }));
    return;
  }

  const given = providerIdentity(connection.provider, request, parsed.value);
  const identity = senderOrBodyIdentity(given, 'provider', body);
  const row = {
    ...base(newId('dlv'), body.length, connection),
    identity: identity.identity,
    identitySource: identity.source,
    senderDeliveryId: identity.senderDeliveryId ?? null,
    payload: body,
  };
  const result = await ingress.writer.accept(row, connection.secretVersion);
  delivery.answerAccept(
    response,
    result,
    connectionNotFound,
    'the connection was changed while this request was in flight',
  );
}

function keptHeaders(provider: Provider, request: IncomingMessage): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const name of ['content-type', 'user-agent', ...KEPT_HEADERS[provider]]) {
    const value = header(request.headers, name);
    if (value !== undefined) kept[name] = value.slice(0, 200);
  }
  return kept;
}
