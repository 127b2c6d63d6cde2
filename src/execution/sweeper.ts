/**
 * This host's leftovers of executions: workspaces of executions that ended longer ago than the retention period,
 * configuration directories of executions no longer running (their runner died before removing them), and
 * presence records of processes and worker connections gone for a week. A pass every ten minutes.
 */
import type { Db } from '../kernel/db.ts';
import type { Logger } from '../kernel/log.ts';
import { Loop } from '../kernel/loop.ts';
import * as sql from './sql.ts';
import { sweepWorkspaces } from './workspace.ts';

export interface SweeperDeps {
  db: Db;
  log: Logger;
  /** Where this host's workspaces live, and how long a finished one is kept. */
  workspaceRoot: string;
  workspaceRetentionMs: number;
  /** Where executions' configuration directories live (removed by the runner; swept after a crash). */
  configRoot?: string;
  /** Between passes (default ten minutes). */
  everyMs?: number;
}

const SWEEP_EVERY_MS = 10 * 60_000;

export class WorkspaceSweeper {
  readonly #deps: SweeperDeps;
  #loop: Loop | undefined;

  constructor(deps: SweeperDeps) {
    this.#deps = deps;
  }

  start(): void {
    this.#loop = new Loop({
      name: 'workspace sweeper',
      everyMs: this.#deps.everyMs ?? SWEEP_EVERY_MS,
      atStart: true,
      pass: async () => {
        await this.sweep();
        await sql.deleteStalePresence(this.#deps.db);
      },
      onError: (err) => this.#deps.log.warn({ err }, 'sweeping workspaces failed'),
    }).start();
  }

  /** Removes this host's workspaces of executions that ended longer ago than the retention period. */
  async sweep(): Promise<string[]> {
    const { workspaceRoot, workspaceRetentionMs } = this.#deps;
    const now = Date.now();
    const candidates: string[] = [];
    await sweepWorkspaces(workspaceRoot, (id, modifiedAt) => {
      if (now - modifiedAt.getTime() > workspaceRetentionMs) candidates.push(id);
      return true;
    });
    await this.#sweepConfigDirs(now);
    if (candidates.length === 0) return [];
    const live = await sql.executionsToKeep(this.#deps.db, candidates, workspaceRetentionMs);
    const keep = new Set(live.rows.map((r) => r.id));
    return sweepWorkspaces(workspaceRoot, (id) => !candidates.includes(id) || keep.has(id));
  }

  /** Configuration directories of executions no longer running (their runner died before removing them). */
  async #sweepConfigDirs(now: number): Promise<void> {
    const { configRoot } = this.#deps;
    if (!configRoot) return;
    const candidates: string[] = [];
    await sweepWorkspaces(configRoot, (id, modifiedAt) => {
      if (now - modifiedAt.getTime() > 60_000) candidates.push(id);
      return true;
    });
    if (candidates.length === 0) return;
    const running = await sql.executionsToKeep(this.#deps.db, candidates, 0);
    const keep = new Set(running.rows.map((r) => r.id));
    await sweepWorkspaces(configRoot, (id) => !candidates.includes(id) || keep.has(id));
  }

  async stop(): Promise<void> {
    await this.#loop?.stop();
  }
}
