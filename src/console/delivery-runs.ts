/** The runs a delivery started, each with its title and state where the viewer may still read it. */
import type { ConsoleApi } from './api.ts';
import { enc } from './api.ts';
import type { Run } from './api-types.ts';

export function deliveryRuns<R extends { run_id: string }>(
  api: ConsoleApi,
  runs: readonly R[],
): Promise<(R & { title?: string; state?: Run['state'] })[]> {
  return Promise.all(
    runs.map(async (r) => {
      const run = await api.get<Run>(`/agent/runs/${enc(r.run_id)}`).catch(() => undefined);
      return { ...r, ...(run ? { title: run.title, state: run.state } : {}) };
    }),
  );
}
