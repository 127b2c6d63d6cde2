/**
 * Webhooks for ingress tests, written straight into the live tables the way an apply leaves them (the
 * definition-file and API paths are exercised by their own suites), then made visible to the server.
 */
import { request as httpRequest } from 'node:http';
import { newId, randomToken } from '../../src/kernel/ids.ts';
import type { TestServer } from '../support/server.ts';

export interface SeedWebhook {
  authMode?: 'token' | 'url_token' | 'signature';
  signatureScheme?: string;
  /** undefined → a random token; null → no secret yet. */
  secret?: string | null;
  deliveryIdHeader?: string;
  enabled?: boolean;
  name?: string;
  factoryId?: string;
  /** false: the server is not told (its snapshot learns of the webhook as another process's apply would tell it). */
  tell?: boolean;
}

export interface SeededWebhook {
  uid: string;
  factoryId: string;
  teamId: string;
  secret: string | null;
  url: string;
}

export async function defaultTeamId(server: TestServer): Promise<string> {
  const res = await server.server.ctx.db.query<{ id: string }>("SELECT id FROM teams WHERE name = 'default'");
  return res.rows[0]!.id;
}

export async function seedFactory(server: TestServer, name = `factory-${randomToken(4)}`): Promise<string> {
  const id = newId('fac');
  await server.server.ctx.db.query(
    `INSERT INTO factories (id, team_id, name, source, state) VALUES ($1, $2, $3, '{"type":"managed"}'::jsonb, 'applied')`,
    [id, await defaultTeamId(server), name],
  );
  return id;
}

export async function seedWebhook(server: TestServer, options: SeedWebhook = {}): Promise<SeededWebhook> {
  const { ctx } = server.server;
  const teamId = await defaultTeamId(server);
  const factoryId = options.factoryId ?? (await seedFactory(server));
  const uid = newId('wh');
  const name =
    options.name ??
    `hook-${randomToken(4)
      .toLowerCase()
      .replace(/[^a-z0-9]/g, 'x')}`;
  const secret = options.secret === undefined ? randomToken(24) : options.secret;
  await ctx.db.query(
    `INSERT INTO webhooks (uid, team_id, factory_id, name, file, auth_mode, signature_scheme, secret_name, secret_ciphertext, delivery_id_header, enabled)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
    [
      uid,
      teamId,
      factoryId,
      name,
      `webhooks/${name}.yaml`,
      options.authMode ?? 'token',
      options.signatureScheme ?? null,
      `webhook-${name}`,
      secret === null ? null : ctx.cipher.encrypt(secret),
      options.deliveryIdHeader ?? null,
      options.enabled ?? true,
    ],
  );
  if (options.tell !== false) await ctx.routing?.reloadFactory(factoryId);
  return { uid, factoryId, teamId, secret, url: `${server.url}/webhooks/w/${uid}` };
}

/** Changes a webhook row the way an apply or the API would, and tells the server. */
export async function updateWebhook(
  server: TestServer,
  hook: SeededWebhook,
  set: { enabled?: boolean; deleted?: boolean; secret?: string | null },
): Promise<void> {
  const { ctx } = server.server;
  if (set.enabled !== undefined)
    await ctx.db.query('UPDATE webhooks SET enabled = $2 WHERE uid = $1', [hook.uid, set.enabled]);
  if (set.deleted) await ctx.db.query('UPDATE webhooks SET deleted_at = ay_now() WHERE uid = $1', [hook.uid]);
  if (set.secret !== undefined) {
    await ctx.db.query(
      'UPDATE webhooks SET secret_ciphertext = $2, secret_version = secret_version + 1 WHERE uid = $1',
      [hook.uid, set.secret === null ? null : ctx.cipher.encrypt(set.secret)],
    );
  }
  await ctx.routing?.reloadFactory(hook.factoryId);
}

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  body: any;
}

/** A POST with exact bytes and exactly these headers (fetch would add its own Content-Type). */
export function post(
  url: string,
  body: Buffer | string,
  headers: Record<string, string> = {},
  options: SendOptions = {},
): Promise<RawResponse> {
  return send(url, 'POST', body, headers, options);
}

export interface SendOptions {
  /** Write the body in pieces (chunked transfer encoding when no Content-Length is given). */
  chunks?: Buffer[];
  /** Runs after the headers and the first chunk are sent, before the rest: a change while the request is in flight. */
  midway?: () => Promise<void>;
}

export function send(
  url: string,
  method: string,
  body: Buffer | string | undefined,
  headers: Record<string, string> = {},
  options: SendOptions = {},
): Promise<RawResponse> {
  const payload = body === undefined ? undefined : Buffer.isBuffer(body) ? body : Buffer.from(body);
  const lengthHeader = payload && !options.chunks ? { 'content-length': String(payload.length) } : {};
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = httpRequest(url, { method, headers: { ...lengthHeader, ...headers } }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => {
        answered = true;
        const text = Buffer.concat(parts).toString('utf8');
        let parsed: unknown;
        try {
          parsed = text ? JSON.parse(text) : undefined;
        } catch {
          parsed = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body: parsed });
      });
    });
    // A server that answers before reading the whole body (413) may close while we still write.
    req.on('error', (err) => {
      if (!answered) setTimeout(() => (answered ? undefined : reject(err)), 200);
    });
    void (async () => {
      const pieces = options.chunks ?? (payload ? [payload] : []);
      for (const [i, piece] of pieces.entries()) {
        if (!req.write(piece)) await new Promise((r) => req.once('drain', r));
        if (i === 0 && options.midway) await options.midway();
      }
      if (pieces.length === 0 && options.midway) await options.midway();
      req.end();
    })().catch(reject);
  });
}

export interface DeliveryRow {
  id: string;
  label: string;
  identity: string | null;
  identity_source: string | null;
  sender_delivery_id: string | null;
  duplicate_of: string | null;
  size: number;
  payload: Uint8Array | null;
  reason: string | null;
  outbox_pending: boolean;
  headers: Record<string, string>;
}

export async function deliveriesOf(server: TestServer, uid: string): Promise<DeliveryRow[]> {
  const res = await server.server.ctx.db.query<DeliveryRow>(
    'SELECT id, label, identity, identity_source, sender_delivery_id, duplicate_of, size, payload, reason, outbox_pending, headers FROM webhook_deliveries WHERE webhook_uid = $1 ORDER BY received_at, id',
    [uid],
  );
  return res.rows;
}
