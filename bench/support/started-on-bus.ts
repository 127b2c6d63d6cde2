import { RUN_EVENTS_TOPIC } from '../../src/kernel/topics.ts';
import type { RunningServer } from '../../src/server.ts';

/**
 * Waits for a run's start on the server's bus: the recorder announces a run's events once its INPROGRESS change
 * is committed, and that is the first announcement of a run. `wait` answers the time it was seen, even when it
 * came before the wait.
 */
export function startedOnBus(server: RunningServer): { wait(runId: string): Promise<number>; stop(): void } {
  const waiting = new Map<string, (t: number) => void>();
  const early = new Map<string, number>();
  const unsubscribe = server.ctx.bus.subscribe(RUN_EVENTS_TOPIC, (data) => {
    const t = performance.now();
    for (const id of (data as { run_ids?: string[] }).run_ids ?? []) {
      const resolve = waiting.get(id);
      if (resolve) {
        waiting.delete(id);
        resolve(t);
      } else if (!early.has(id)) early.set(id, t);
    }
  });
  return {
    wait: (runId) => {
      const t = early.get(runId);
      if (t !== undefined) return Promise.resolve(t);
      return new Promise((resolve) => waiting.set(runId, resolve));
    },
    stop: unsubscribe,
  };
}
