/**
 * Status messages of runs that stay queued because nothing can take them: a run for a self-hosted worker
 * that is not connected (or offers not the run's harness), and a run whose harness no executor of the
 * service offers. Written only when the message changes; `updated_at` is left alone (nothing about the run
 * itself changed).
 */
import type { Bus } from '../kernel/bus.ts';
import type { Db } from '../kernel/db.ts';
import type { Logger } from '../kernel/log.ts';
import { RUNS_QUEUED_TOPIC } from '../kernel/topics.ts';
import { harnessFor, isHarnessType } from './settings.ts';
import type { HarnessType } from './settings.ts';

/** An executor process or worker connection counts as present when seen within this many heartbeats. */
export const PRESENCE_HEARTBEATS = 3;

interface WaitingRun {
  id: string;
  team_id: string;
  worker_host: string | null;
  harness: string;
  message: string | null;
}

interface Offer {
  team_id: string | null;
  worker_id: string | null;
  harnesses: string[];
  default_harness: string | null;
}

function offers(offer: Offer, requested: string): boolean {
  const def =
    offer.default_harness && isHarnessType(offer.default_harness) ? (offer.default_harness as HarnessType) : undefined;
  const wanted = harnessFor(requested, def);
  return wanted !== undefined && offer.harnesses.includes(wanted);
}

export function waitingMessage(
  run: Pick<WaitingRun, 'team_id' | 'worker_host' | 'harness'>,
  present: readonly Offer[],
): string | null {
  const harness = run.harness === 'oz' ? 'default' : run.harness;
  if (run.worker_host) {
    const workers = present.filter((o) => o.team_id === run.team_id && o.worker_id === run.worker_host);
    if (workers.length === 0) return `Waiting for self-hosted worker "${run.worker_host}" to connect`;
    if (!workers.some((w) => offers(w, run.harness))) {
      return `Waiting for self-hosted worker "${run.worker_host}" with the ${harness} harness (the connected ones offer: ${[...new Set(workers.flatMap((w) => w.harnesses))].join(', ') || 'none'})`;
    }
    return `Waiting for a free slot on self-hosted worker "${run.worker_host}"`;
  }
  const executors = present.filter((o) => o.team_id === null);
  if (executors.some((e) => offers(e, run.harness))) return null;
  return run.harness === 'oz'
    ? 'Waiting for an executor with a default harness: no server offers one (set AGENTYARD_HARNESSES or AGENTYARD_DEFAULT_HARNESS)'
    : `Waiting for an executor that runs the ${run.harness} harness: no server offers it (AGENTYARD_HARNESSES)`;
}

/** Updates the waiting messages of queued runs; answers how many changed. */
export async function annotateWaitingRuns(db: Db, presenceMs: number): Promise<number> {
  const present = (
    await db.query<Offer>(
      `SELECT team_id, worker_id, harnesses, default_harness FROM worker_connections
       WHERE disconnected_at IS NULL AND last_seen_at > ay_now() - $1 * interval '1 millisecond'
       UNION ALL
       SELECT NULL, NULL, harnesses, default_harness FROM executor_processes WHERE last_seen_at > ay_now() - $1 * interval '1 millisecond'`,
      [presenceMs],
    )
  ).rows;
  // Service runs and worker runs apart, each through its partial index of queued runs (migration 0030): written
  // as one `state = 'QUEUED'`, PostgreSQL before 18 read every run of the table, every WAITING_EVERY_MS.
  const runs = (
    await db.query<WaitingRun>(
      `SELECT r.id, r.team_id, r.worker_host, coalesce(nullif(lower(r.config->'harness'->>'type'), ''), 'oz') AS harness,
         r.status_message->>'message' AS message
       FROM (
         (SELECT * FROM runs WHERE state = 'QUEUED' AND worker_host IS NULL ORDER BY created_at LIMIT 1000)
         UNION ALL
         (SELECT * FROM runs WHERE state = 'QUEUED' AND worker_host IS NOT NULL ORDER BY created_at LIMIT 1000)
       ) r
       WHERE r.factory_id IS NULL OR NOT EXISTS (
         SELECT 1 FROM kubernetes_factories k WHERE k.factory_id = r.factory_id AND k.deleted_at IS NULL AND k.executor = 'kubernetes')
       ORDER BY r.created_at LIMIT 1000`,
    )
  ).rows;
  const changes = runs
    .map((r) => ({ id: r.id, message: waitingMessage(r, present), old: r.message }))
    .filter((c) => c.message !== null && c.message !== c.old);
  if (changes.length === 0) return 0;
  const res = await db.query(
    `UPDATE runs r SET status_message = jsonb_build_object('message', c.message)
     FROM unnest($1::text[], $2::text[]) AS c(id, message)
     WHERE r.id = c.id AND r.state = 'QUEUED'`,
    [changes.map((c) => c.id), changes.map((c) => c.message)],
  );
  return res.rowCount;
}

const WAITING_EVERY_MS = 2_000;

/**
 * In processes with executors: every 2 s, and 250 ms after runs are queued, annotates the runs that nothing here
 * or anywhere can take with what they wait for; answers the stop.
 */
export function startWaitingAnnotations(deps: { db: Db; bus: Bus; log: Logger }, heartbeatMs: number): () => void {
  let pending: NodeJS.Timeout | undefined;
  const annotate = () => {
    pending = undefined;
    void annotateWaitingRuns(deps.db, heartbeatMs * PRESENCE_HEARTBEATS).catch((err: unknown) =>
      deps.log.debug({ err }, 'annotating waiting runs failed'),
    );
  };
  const timer = setInterval(annotate, WAITING_EVERY_MS);
  timer.unref();
  const unsubscribe = deps.bus.subscribe(RUNS_QUEUED_TOPIC, () => {
    pending ??= setTimeout(annotate, 250).unref();
  });
  return () => {
    clearInterval(timer);
    clearTimeout(pending);
    unsubscribe();
  };
}
