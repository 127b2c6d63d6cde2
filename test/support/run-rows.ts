/** Runs as the engine inserts them (engine.insertRuns), for tests that claim straight from the queue. */
import type { InsertRun } from '../../src/engine/engine.ts';
import { newId } from '../../src/kernel/ids.ts';

/** A queued API run of the team, of no factory, automation or parent; `over` sets the rest. */
export function queuedRun(teamId: string, over: Partial<InsertRun> = {}): InsertRun {
  return {
    id: newId('run'),
    teamId,
    title: 't',
    prompt: 'p',
    state: 'QUEUED',
    source: 'API',
    config: {},
    workerHost: null,
    creator: null,
    factoryId: null,
    automationId: null,
    deliveryId: null,
    scheduleId: null,
    parentRunId: null,
    conversationId: null,
    sessionId: crypto.randomUUID(),
    metadata: {},
    ...over,
  };
}
