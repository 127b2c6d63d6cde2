import { Type } from 'typebox';
import type { AppInstance } from '../plugin.ts';
import type { ServiceContext } from '../context.ts';
import { listWorkerConnections } from './sql.ts';

const WorkerSchema = Type.Object({
  worker_id: Type.String(),
  connection_id: Type.String(),
  connected: Type.Boolean(),
  capacity: Type.Integer(),
  load: Type.Integer({ description: 'Runs it executes now' }),
  harnesses: Type.Array(Type.String()),
  default_harness: Type.Union([Type.String(), Type.Null()]),
  host: Type.Union([Type.String(), Type.Null()]),
  version: Type.Union([Type.String(), Type.Null()]),
  protocol: Type.Integer(),
  registered_with: Type.Union(
    [
      Type.Object({
        kind: Type.Union([Type.Literal('key'), Type.Literal('token')]),
        id: Type.String({ description: "The team admin's API key id, or the worker token's id (to revoke it)" }),
      }),
      Type.Null(),
    ],
    { description: 'What the worker connected with (docs/worker-protocol.md, Credentials)' },
  ),
  connected_at: Type.String({ format: 'date-time' }),
  last_seen_at: Type.String({ format: 'date-time' }),
  disconnected_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
});

/** A connection counts as connected while it heartbeats; one not seen for this many heartbeats is not. */
const STALE_HEARTBEATS = 3;
/** Connections seen within this window are listed. */
const RECENT_MS = 24 * 3_600_000;

export async function registerWorkerRoutes(
  app: AppInstance,
  ctx: ServiceContext,
  heartbeatMs: () => number,
): Promise<void> {
  app.get(
    '/workers',
    {
      schema: {
        tags: ['workers'],
        summary:
          "The team's self-hosted workers: connected ones, and those seen in the last 24 hours (one entry per connection; several workers may share an ID)",
        response: { 200: Type.Object({ workers: Type.Array(WorkerSchema) }) },
      },
    },
    async (request) => {
      const res = await listWorkerConnections(
        ctx.db,
        request.principal.teamId,
        heartbeatMs() * STALE_HEARTBEATS,
        RECENT_MS,
      );
      return {
        workers: res.rows.map((w) => ({
          worker_id: w.worker_id,
          connection_id: w.id,
          connected: w.connected,
          capacity: w.capacity,
          load: w.connected ? w.load : 0,
          harnesses: w.harnesses,
          default_harness: w.default_harness,
          host: w.host,
          version: w.version,
          protocol: w.protocol,
          registered_with:
            w.credential_kind && w.credential_id ? { kind: w.credential_kind, id: w.credential_id } : null,
          connected_at: w.connected_at.toISOString(),
          last_seen_at: w.last_seen_at.toISOString(),
          disconnected_at: w.disconnected_at?.toISOString() ?? null,
        })),
      };
    },
  );
}
