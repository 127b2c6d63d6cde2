import { newId } from '../../src/kernel/ids.ts';
import { DELIVERIES_EVALUATED_TOPIC } from '../../src/kernel/topics.ts';
import { whenTold } from '../support/signals.ts';
import type { TestServer } from '../support/server.ts';
import { defaultTeamId } from '../ingress/support.ts';

export interface SeedAutomation {
  factoryId: string;
  name: string;
  prompt?: string;
  agent?: string;
  enabled?: boolean;
  deleted?: boolean;
  config?: Record<string, unknown>;
  /** One entry per webhook trigger: the webhook UID and its payload filter. */
  triggers: { webhookUid: string; payload?: Record<string, unknown> }[];
}

/** An automation row and its webhook triggers, as an apply writes them. */
export async function seedAutomation(server: TestServer, a: SeedAutomation): Promise<string> {
  const db = server.server.ctx.db;
  const id = newId('auto');
  await db.query(
    `INSERT INTO automations (id, team_id, factory_id, name, file, enabled, prompt, agent, config, triggers, deleted_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, CASE WHEN $11 THEN ay_now() END)`,
    [
      id,
      await defaultTeamId(server),
      a.factoryId,
      a.name,
      `automations/${a.name}/automation.md`,
      a.enabled ?? true,
      a.prompt ?? `Handle the ${a.name} event.`,
      a.agent ?? null,
      JSON.stringify(a.config ?? { name: a.name }),
      JSON.stringify(
        a.triggers.map((t) => ({
          provider: 'webhook',
          event: 'received',
          filter: { webhook_ids: [t.webhookUid], ...(t.payload ? { payload: t.payload } : {}) },
        })),
      ),
      a.deleted ?? false,
    ],
  );
  for (const [i, t] of a.triggers.entries()) {
    if (a.deleted) break;
    await db.query(
      'INSERT INTO automation_webhook_triggers (automation_id, webhook_uid, trigger_index, payload_filter) VALUES ($1, $2, $3, $4)',
      [id, t.webhookUid, i, t.payload ? JSON.stringify(t.payload) : null],
    );
  }
  return id;
}

/**
 * Gives a seeded factory an applied definition with agents (their prompts are the runs' base prompts) and,
 * when given, the name of its foreman.
 */
export async function setAgents(
  server: TestServer,
  factoryId: string,
  agents: { name: string; prompt: string }[],
  foreman?: string,
): Promise<void> {
  await server.server.ctx.db.query('UPDATE factories SET definition = $2 WHERE id = $1', [
    factoryId,
    JSON.stringify({ agents, ...(foreman ? { foreman } : {}) }),
  ]);
}

/**
 * Waits until the outbox holds nothing for these deliveries (the evaluator has handled them): looks now and each
 * time an evaluator tells it committed a batch (`webhooks.deliveries_evaluated`; from other processes too, on
 * PostgreSQL), never on a timer.
 */
export async function waitEvaluated(
  server: TestServer,
  deliveryIds: readonly string[],
  timeoutMs = 15_000,
): Promise<void> {
  let pending = 0;
  await whenTold(
    server.server.ctx.bus,
    [DELIVERIES_EVALUATED_TOPIC],
    async () => {
      const res = await server.server.ctx.db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM webhook_deliveries WHERE id = ANY($1::text[]) AND outbox_pending',
        [deliveryIds],
      );
      pending = res.rows[0]!.n;
      return pending === 0;
    },
    { what: `the evaluation of ${deliveryIds.length} deliveries`, timeoutMs },
  ).catch((err: unknown) => {
    throw new Error(`${pending} deliveries still pending evaluation: ${String(err)}`);
  });
}

export interface RunRecord {
  id: string;
  automation_id: string | null;
  delivery_id: string | null;
}

export async function runsOfDeliveries(server: TestServer, deliveryIds: readonly string[]): Promise<RunRecord[]> {
  const res = await server.server.ctx.db.query<RunRecord>(
    'SELECT id, automation_id, delivery_id FROM runs WHERE delivery_id = ANY($1::text[]) ORDER BY automation_id, delivery_id',
    [deliveryIds],
  );
  return res.rows;
}
