/**
 * The server under test of bench/hostile-input.ts: Agentyard as `agentyard serve --roles ingress,api,controller`
 * builds it, with the per-sender delivery limit and the validate rate limit lifted (the benchmark is one sender
 * and one attacker; the limiters stay in the path). Seeds a token webhook and prints `READY {json}`.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { loadConfig } from '../src/config.ts';
import { startServer } from '../src/server.ts';
import { newId, randomToken } from '../src/kernel/ids.ts';

const config = loadConfig(process.env, {
  host: '127.0.0.1',
  port: Number(process.env.PORT ?? 0),
  roles: new Set(['ingress', 'api', 'controller']),
  validateRateLimit: 0,
});
const server = await startServer(config, { compose: { ingress: { limits: { senderPoints: 1_000_000_000 } } } });
const { db, cipher } = server.ctx;

const team = (await db.query<{ id: string }>('SELECT id FROM teams ORDER BY created_at LIMIT 1')).rows[0]!.id;
const factoryId = newId('fac');
await db.query(
  `INSERT INTO factories (id, team_id, name, source, state) VALUES ($1, $2, 'bench-hooks', '{"type":"managed"}', 'applied')`,
  [factoryId, team],
);
const token = randomToken(32);
const uid = newId('wh');
await db.query(
  `INSERT INTO webhooks (uid, team_id, factory_id, name, file, auth_mode, secret_name, secret_ciphertext)
   VALUES ($1, $2, $3, 'bench-token', 'webhooks/bench-token.yaml', 'token', 'bench-token', $4)`,
  [uid, team, factoryId, cipher.encrypt(token)],
);
await server.services.routing?.reloadFactory(factoryId);

process.stdout.write(
  `READY ${JSON.stringify({ url: server.url, token, tokenUrl: `${server.url}/webhooks/w/${uid}` })}\n`,
);

// SIGUSR2 prints the event loop's delay since the last SIGUSR2 (one line, `LOOP {json}`) and starts again.
const loop = monitorEventLoopDelay({ resolution: 5 });
loop.enable();
process.on('SIGUSR2', () => {
  const ms = (ns: number) => Math.round(ns / 1e5) / 10;
  process.stdout.write(
    `LOOP ${JSON.stringify({ p50: ms(loop.percentile(50)), p99: ms(loop.percentile(99)), max: ms(loop.max) })}\n`,
  );
  loop.reset();
});

process.on('SIGTERM', () => {
  void server.stop().finally(() => process.exit(0));
});
