/**
 * Run tokens: the bearer credential an execution's agent uses on the factory interface (/api/v1/mcp/factory).
 * Random, stored only as a SHA-256, valid only while its execution is running and is its run's current one,
 * and bound to that run: its team, factory and tree follow from the run (docs/orchestration.md).
 */
import { hash } from 'node:crypto';
import type { Queryable } from '../kernel/db.ts';
import { randomToken } from '../kernel/ids.ts';
import type { RunRow } from '../engine/model.ts';
import type { DispatchFacts } from '../runs/sql.ts';
import * as sql from './sql.ts';

export const RUN_TOKEN_PREFIX = 'ayrt_';

export function hashRunToken(token: string): string {
  return hash('sha256', token, 'hex');
}

export function isRunToken(value: string): boolean {
  return value.startsWith(RUN_TOKEN_PREFIX);
}

/** New tokens for executions, stored as hashes in one statement; answers the tokens by execution id. */
export async function issueRunTokens(
  q: Queryable,
  executions: readonly { executionId: string; runId: string; teamId: string }[],
): Promise<Map<string, string>> {
  const tokens = executions.map((e) => ({ ...e, token: `${RUN_TOKEN_PREFIX}${randomToken(32)}` }));
  await sql.insertRunTokens(
    q,
    tokens.map((t) => ({ hash: hashRunToken(t.token), executionId: t.executionId, runId: t.runId, teamId: t.teamId })),
  );
  return new Map(tokens.map((t) => [t.executionId, t.token]));
}

/** Who a token speaks for, while its execution runs: the run as it is now. */
export interface RunTokenHolder {
  runId: string;
  executionId: string;
  teamId: string;
  factoryId: string | null;
  run: RunRow;
  /** Asked for with `forDispatch`: what a dispatch from this run is checked against, read with the token. */
  dispatch?: { facts: DispatchFacts; factoryUpdatedAt: Date | null };
}

/**
 * The holder of a live token, or undefined. `forDispatch`: the request dispatches a child of the run, so the
 * same statement reads the tree and limit facts and the factory's version (a dispatch then costs one statement
 * more than a run created through the API: its insert).
 */
export async function verifyRunToken(
  q: Queryable,
  token: string,
  options: { forDispatch?: boolean } = {},
): Promise<RunTokenHolder | undefined> {
  if (!isRunToken(token) || token.length > 200) return undefined;
  return verifyRunTokenHash(q, hashRunToken(token), options);
}

/** `verifyRunToken` for a token known by its hash. */
export async function verifyRunTokenHash(
  q: Queryable,
  hashed: string,
  options: { forDispatch?: boolean } = {},
): Promise<RunTokenHolder | undefined> {
  let row: sql.LiveTokenRow | undefined;
  let dispatch: RunTokenHolder['dispatch'];
  if (options.forDispatch) {
    const found = await sql.liveRunTokenForDispatch(q, hashed);
    row = found?.holder;
    if (found) dispatch = { facts: found.facts, factoryUpdatedAt: found.factoryUpdatedAt };
  } else {
    row = await sql.liveRunToken(q, hashed);
  }
  if (!row) return undefined;
  const { token_execution_id: executionId, ...run } = row;
  return {
    runId: run.id,
    executionId,
    teamId: run.team_id,
    factoryId: run.factory_id,
    run,
    ...(dispatch ? { dispatch } : {}),
  };
}
