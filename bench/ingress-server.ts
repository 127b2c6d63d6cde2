/**
 * The server under test of bench/ingress.ts: Agentyard exactly as `agentyard serve --roles ingress` builds it,
 * except that the per-sender rate limit is lifted (the benchmark is one sender sending thousands per
 * second; the limiter itself stays in the path). Seeds a factory with a token webhook and a Standard
 * Webhooks webhook, then prints `READY {json}` with their URLs and secrets.
 */
import { randomBytes } from 'node:crypto';
import { loadConfig } from '../src/config.ts';
import { startServer } from '../src/server.ts';
import { newId, randomToken } from '../src/kernel/ids.ts';

const config = loadConfig(process.env, {
  host: '127.0.0.1',
  port: Number(process.env.PORT ?? 0),
  roles: new Set(['ingress']),
});
// INGRESS_THROUGH_FASTIFY=1: deliveries go through a Fastify route instead (bench/ingress-plugin.ts).
const throughFastify = process.env.INGRESS_THROUGH_FASTIFY === '1';
const server = await startServer(config, {
  compose: { ingress: { limits: { senderPoints: 1_000_000_000 }, throughFastify } },
});
const { db, cipher } = server.ctx;

const team = (await db.query<{ id: string }>('SELECT id FROM teams ORDER BY created_at LIMIT 1')).rows[0]!.id;
const factoryId = newId('fac');
await db.query(
  `INSERT INTO factories (id, team_id, name, source, state) VALUES ($1, $2, $3, '{"type":"managed"}', 'applied')`,
  [factoryId, team, `bench-${randomBytes(3).toString('hex')}`],
);
const token = randomToken(32);
const whsec = `whsec_${randomBytes(32).toString('base64')}`;
const hooks = { token: newId('wh'), signature: newId('wh') };
for (const [uid, name, mode, scheme, secret] of [
  [hooks.token, 'bench-token', 'token', null, token],
  [hooks.signature, 'bench-signed', 'signature', 'standard_webhooks', whsec],
] as const) {
  await db.query(
    `INSERT INTO webhooks (uid, team_id, factory_id, name, file, auth_mode, signature_scheme, secret_name, secret_ciphertext)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [uid, team, factoryId, name, `webhooks/${name}.yaml`, mode, scheme, name, cipher.encrypt(secret)],
  );
}
await server.services.routing?.reloadFactory(factoryId);

process.stdout.write(
  `READY ${JSON.stringify({ url: server.url, token, whsec, tokenUrl: `${server.url}/webhooks/w/${hooks.token}`, signatureUrl: `${server.url}/webhooks/w/${hooks.signature}` })}\n`,
);

process.on('SIGTERM', () => {
  void server.stop().finally(() => process.exit(0));
});
