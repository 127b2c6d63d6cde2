/**
 * Environments, as the clients' `CloudEnvironment`: Agentyard has no cloud environments of its own; a
 * factory's runners are what a run executes in, so each runner of each applied factory is one environment.
 */
import type { FactoryAgentsRow } from './sql.ts';

export interface RunnerEnvironment {
  uid: string;
  config: {
    name: string;
    description: string | null;
    docker_image?: string;
    github_repos: { owner: string; repo: string }[];
    setup_commands: string[];
  };
  last_updated: string;
  setup_failed: boolean;
  scope: { type: 'Team'; uid: string };
  factory_uid: string;
  last_task_run_timestamp?: string | null;
  last_task_created?: {
    id: string;
    title: string;
    state: string;
    created_at: string;
    updated_at: string;
    started_at: string | null;
  };
}

interface RunnerJson {
  name?: unknown;
  description?: unknown;
  setupCommands?: unknown;
  platform?: { dockerImage?: unknown };
}

/** The environment uid of a factory's runner. */
export function environmentUid(factoryId: string, runner: string): string {
  return `${factoryId}.${runner}`;
}

/** The runners of each factory, as environments (`last_task_*` come from the caller's run query). */
export function environmentsOfFactories(
  rows: readonly (FactoryAgentsRow & { updated_at: Date })[],
  teamId: string,
): RunnerEnvironment[] {
  const out: RunnerEnvironment[] = [];
  for (const row of rows) {
    const definition = (row.definition ?? {}) as {
      runners?: RunnerJson[];
      factory?: { repositories?: { owner?: unknown; name?: unknown }[] };
    };
    const repos = (definition.factory?.repositories ?? []).flatMap((r) =>
      typeof r.owner === 'string' && typeof r.name === 'string' ? [{ owner: r.owner, repo: r.name }] : [],
    );
    for (const runner of definition.runners ?? []) {
      if (typeof runner.name !== 'string') continue;
      const image = runner.platform?.dockerImage;
      out.push({
        uid: environmentUid(row.id, runner.name),
        config: {
          name: runner.name,
          description: typeof runner.description === 'string' ? runner.description : `a runner of factory ${row.name}`,
          ...(typeof image === 'string' ? { docker_image: image } : {}),
          github_repos: repos,
          setup_commands: Array.isArray(runner.setupCommands)
            ? runner.setupCommands.filter((c): c is string => typeof c === 'string')
            : [],
        },
        last_updated: row.updated_at.toISOString(),
        setup_failed: false,
        scope: { type: 'Team', uid: teamId },
        factory_uid: row.id,
      });
    }
  }
  return out;
}
