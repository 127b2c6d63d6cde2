/**
 * Status messages of runs that stay queued because nothing can take them: a run for a self-hosted worker
 * that is not connected (or offers not the run's harness), and a run whose harness no executor of the
 * service offers. Written only when the message changes; `updated_at` is left alone (nothing about the run
 * itself changed). Each change is told on `runs.changed` (the console and the event streams show it).
 */
import type { Bus } from '../kernel/bus.ts';
import type { Db } from '../kernel/db.ts';
import type { Logger } from '../kernel/log.ts';
import { RUN_CHANGED_TOPIC, RUNS_QUEUED_TOPIC } from '../kernel/topics.ts';
import { harnessFor, isHarnessType } from './settings.ts';
import type { HarnessType } from './settings.ts';
import type { Offer, WaitingRun } from './sql.ts';
import * as sql from './sql.ts';
import * as engine from '../engine/engine.ts';
import { Loop } from '../kernel/loop.ts';

/** An executor process or worker connection counts as present when seen within this many heartbeats. */
export const PRESENCE_HEARTBEATS = 3;

function offers(offer: Offer, requested: string): boolean {
  const def =
    offer.default_harness && isHarnessType(offer.default_harness) ? (offer.default_harness as HarnessType) : undefined;
  const wanted = harnessFor(requested, def);
  return wanted !== undefined && offer.harnesses.includes(wanted);
}

export function waitingMessage(
  run: Pick<WaitingRun, 'team_id' | 'worker_host' | 'harness'> & { acts_as_member?: boolean },
  present: readonly Offer[],
): string | null {
  const harness = run.harness === 'oz' ? 'default' : run.harness;
  if (run.worker_host) {
    const workers = present.filter((o) => o.team_id === run.team_id && o.worker_id === run.worker_host);
    if (workers.length === 0) return `Waiting for self-hosted worker "${run.worker_host}" to connect`;
    if (!workers.some((w) => offers(w, run.harness))) {
      return `Waiting for self-hosted worker "${run.worker_host}" with the ${harness} harness (the connected ones offer: ${[...new Set(workers.flatMap((w) => w.harnesses))].join(', ') || 'none'})`;
    }
    // a run carrying a member's own tokens goes to an admin key's worker, or a token of that member's (security.md)
    if (run.acts_as_member && workers.every((w) => w.by_token))
      return `Waiting for self-hosted worker "${run.worker_host}" connected with a team admin key: this run acts as a member (credentialStrategy CREATOR), and the connected ones use worker tokens, which receive it only when that member made the token`;
    return `Waiting for a free slot on self-hosted worker "${run.worker_host}"`;
  }
  const executors = present.filter((o) => o.team_id === null);
  if (executors.some((e) => offers(e, run.harness))) return null;
  return run.harness === 'oz'
    ? 'Waiting for an executor with a default harness: no server offers one (set AGENTYARD_HARNESSES or AGENTYARD_DEFAULT_HARNESS)'
    : `Waiting for an executor that runs the ${run.harness} harness: no server offers it (AGENTYARD_HARNESSES)`;
}

/** Updates the waiting messages of queued runs; answers how many changed. */
export async function annotateWaitingRuns(db: Db, bus: Bus, presenceMs: number): Promise<number> {
  const present = (await sql.presentOffers(db, presenceMs)).rows;
  const runs = (await sql.queuedRunsToAnnotate(db)).rows;
  const changes = runs
    .map((r) => ({ id: r.id, message: waitingMessage(r, present), old: r.message }))
    .filter((c) => c.message !== null && c.message !== c.old);
  if (changes.length === 0) return 0;
  const changed = await engine.setWaitingMessages(
    db,
    changes.map((c) => ({ id: c.id, message: c.message! })),
  );
  for (const c of changes) await bus.publish(RUN_CHANGED_TOPIC, { run_id: c.id });
  return changed;
}

const WAITING_EVERY_MS = 2_000;

/**
 * In processes with executors: every 2 s, and 250 ms after runs are queued, annotates the runs that nothing here
 * or anywhere can take with what they wait for; answers the stop.
 */
export function startWaitingAnnotations(deps: { db: Db; bus: Bus; log: Logger }, heartbeatMs: number): () => void {
  const loop = new Loop({
    name: 'waiting annotations',
    everyMs: WAITING_EVERY_MS,
    atStart: false,
    topics: { bus: deps.bus, topics: [RUNS_QUEUED_TOPIC], delayMs: 250 },
    pass: async () => {
      await annotateWaitingRuns(deps.db, deps.bus, heartbeatMs * PRESENCE_HEARTBEATS);
    },
    onError: (err) => deps.log.debug({ err }, 'annotating waiting runs failed'),
  }).start();
  return () => void loop.stop();
}
