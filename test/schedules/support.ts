import { waitForCreatedRun } from '../support/run-events.ts';
import { whenTold } from '../support/signals.ts';
import type { Check } from '../support/signals.ts';
import {
  RUN_LIFECYCLE_TOPIC,
  RUNS_QUEUED_TOPIC,
  SCHEDULES_CHANGED_TOPIC,
  SCHEDULES_FIRED_TOPIC,
} from '../../src/kernel/topics.ts';
import type { Topic } from '../../src/kernel/topics.ts';
import type { Clock } from '../../src/kernel/clock.ts';
import type { Scheduler } from '../../src/schedules/scheduler.ts';
import { openPostgres } from '../../src/store/pg.ts';
import type { TestDatabase } from '../support/db.ts';
import type { Engine } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';

export interface ScheduleTestServer extends TestServer {
  scheduler: Scheduler;
}

/** A real server whose schedules module runs on `clock`; the scheduler is handed back for explicit ticks. */
export async function startScheduleServer(
  engine: Engine,
  options: { clock: Clock; database?: TestDatabase; adminKey?: string },
): Promise<ScheduleTestServer> {
  const server = await startTestServer(engine, {
    compose: { clock: options.clock },
    ...(options.database ? { database: options.database } : {}),
    ...(options.adminKey ? { config: { bootstrapApiKey: options.adminKey } } : {}),
  });
  const { scheduler } = server.server.services;
  if (!scheduler) throw new Error('the scheduler did not start (is the scheduler role on?)');
  return Object.assign(server, { scheduler });
}

/**
 * The same database through another connection pool, as a second process would open it (PostgreSQL);
 * PGlite is in-process only, so there the database object itself is shared.
 */
export async function secondConnection(database: TestDatabase): Promise<TestDatabase> {
  if (!database.url) return { ...database, close: async () => {} };
  const db = await openPostgres({ connectionString: database.url });
  return { db, engine: database.engine, url: database.url, close: () => db.close() };
}

/** What says that schedules fired or changed, or that runs were created (here or, on PostgreSQL, elsewhere). */
const SCHEDULE_TOPICS: readonly Topic[] = [
  SCHEDULES_FIRED_TOPIC,
  SCHEDULES_CHANGED_TOPIC,
  RUN_LIFECYCLE_TOPIC,
  RUNS_QUEUED_TOPIC,
];

/**
 * Resolves with what `probe` answers once it answers a value: asked now and each time one of `servers` says a
 * schedule fired or changed or a run was created (SCHEDULE_TOPICS), never on a timer. On PGlite every server in
 * the process has its own bus: pass each that may fire.
 */
export function whenScheduled<T>(
  servers: TestServer | readonly TestServer[],
  probe: Check<T>,
  what: string,
  timeoutMs = 15_000,
): Promise<T> {
  const list: readonly TestServer[] = Array.isArray(servers) ? servers : [servers as TestServer];
  return whenTold(
    list.map((x) => x.server.ctx.bus),
    SCHEDULE_TOPICS,
    probe,
    { what, timeoutMs },
  );
}

export interface RunSummary {
  run_id: string;
  source: string;
  prompt: string;
  schedule?: { schedule_id: string; schedule_name: string; cron_schedule: string };
  [key: string]: unknown;
}

export async function runsOfSchedule(s: TestServer, scheduleId: string): Promise<RunSummary[]> {
  const res = await s.api('GET', `/agent/runs?schedule_id=${encodeURIComponent(scheduleId)}&limit=500`);
  if (res.status !== 200) throw new Error(`list runs answered ${res.status}: ${res.text}`);
  return res.body.runs as RunSummary[];
}

/** Waits until the schedule has started at least `count` runs (looking again as runs are created); answers them. */
export async function waitForRuns(s: TestServer, scheduleId: string, what: string, count = 1): Promise<RunSummary[]> {
  return waitForCreatedRun(
    s.server.ctx.bus,
    async () => {
      const runs = await runsOfSchedule(s, scheduleId);
      return runs.length >= count ? runs : undefined;
    },
    { what, timeoutMs: 15_000 },
  );
}
