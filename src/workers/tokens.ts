/**
 * Worker tokens (docs/worker-protocol.md, "Credentials"): random, shown once, stored only as their SHA-256, each
 * scoped to a team and a list of worker ids. A team admin creates, lists and revokes them.
 */
import { hash } from 'node:crypto';
import { AppError } from '../kernel/errors.ts';
import type { Queryable } from '../kernel/db.ts';
import { newId, randomToken } from '../kernel/ids.ts';
import { WORKER_ID } from './protocol.ts';
import * as sql from './sql.ts';
import type { WorkerTokenRow } from './sql.ts';

export const WORKER_TOKEN_PREFIX = 'ayw_';
const MAX_WORKER_IDS = 100;

export function isWorkerToken(bearer: string): boolean {
  return bearer.startsWith(WORKER_TOKEN_PREFIX);
}

export function hashWorkerToken(token: string): string {
  return hash('sha256', token, 'hex');
}

/** Why a worker id cannot be registered, or undefined when it can. */
export function workerIdProblem(id: string): string | undefined {
  if (!WORKER_ID.test(id)) return 'must be 1-63 characters of [A-Za-z0-9._-]';
  if (id === 'service' || id.startsWith('warp')) return 'is the service\'s own ("service", "warp…")';
  return undefined;
}

export function checkWorkerIds(ids: readonly string[]): string[] {
  if (ids.length === 0) throw new AppError('invalid_request', 'worker_ids must name at least one worker id');
  if (ids.length > MAX_WORKER_IDS)
    throw new AppError('invalid_request', `worker_ids: at most ${MAX_WORKER_IDS} worker ids`);
  for (const [i, id] of ids.entries()) {
    const problem = workerIdProblem(id);
    if (problem) throw new AppError('invalid_request', `worker_ids[${i}] "${id}" ${problem}`);
  }
  return [...new Set(ids)];
}

export async function createWorkerToken(
  q: Queryable,
  input: { teamId: string; name: string; workerIds: readonly string[]; createdBy: { id: string; name: string } },
): Promise<{ row: WorkerTokenRow; token: string }> {
  const name = input.name.trim();
  if (!name) throw new AppError('invalid_request', 'name must not be empty');
  const workerIds = checkWorkerIds(input.workerIds);
  const token = `${WORKER_TOKEN_PREFIX}${randomToken(32)}`;
  const row = await sql.insertWorkerToken(q, {
    id: newId('wtk'),
    team_id: input.teamId,
    name,
    prefix: token.slice(0, 12),
    tokenHash: hashWorkerToken(token),
    worker_ids: workerIds,
    created_by: input.createdBy.id,
    created_by_name: input.createdBy.name,
  });
  return { row, token };
}
