import { AppError } from '../kernel/errors.ts';
import type { Queryable, SqlValue } from '../kernel/db.ts';
import { storedSourcesFor } from '../engine/client-enums.ts';
import type { RunRow } from '../engine/model.ts';
import { RUN_STATES } from '../engine/state-machine.ts';

export const SORT_FIELDS = ['updated_at', 'created_at', 'title', 'agent'] as const;
export type SortField = (typeof SORT_FIELDS)[number];
export type SortOrder = 'asc' | 'desc';

export interface RunFilters {
  states?: string[];
  configName?: string;
  modelId?: string;
  creator?: string;
  source?: string;
  executionLocation?: string;
  createdAfter?: Date;
  createdBefore?: Date;
  updatedAfter?: Date;
  environmentId?: string;
  skillSpec?: string;
  scheduleId?: string;
  ancestorRunId?: string;
  artifactType?: string;
  q?: string;
  factoryId?: string;
  automationId?: string;
  executor?: string;
  workerHost?: string;
  metadata?: Record<string, string>;
}

export interface ListRunsQuery {
  teamId: string;
  filters: RunFilters;
  sortBy: SortField;
  sortOrder: SortOrder;
  limit: number;
  cursor?: string;
}

interface SortKey {
  /** SQL expression, evaluated on `runs`. */
  expr: string;
  dir: SortOrder;
  cast: string;
  read: (row: RunRow) => string | boolean;
}

/** The keyset of each sort: the sort expression(s), then the id as tie-breaker. */
function sortKeys(sortBy: SortField, order: SortOrder): SortKey[] {
  const id: SortKey = { expr: 'id', dir: order, cast: 'text', read: (r) => r.id };
  switch (sortBy) {
    case 'updated_at':
      return [{ expr: 'updated_at', dir: order, cast: 'timestamptz', read: (r) => r.updated_at.toISOString() }, id];
    case 'created_at':
      return [{ expr: 'created_at', dir: order, cast: 'timestamptz', read: (r) => r.created_at.toISOString() }, id];
    case 'title':
      return [{ expr: 'title', dir: order, cast: 'text', read: (r) => r.title }, id];
    case 'agent':
      // Runs without a skill come last in either direction.
      return [
        { expr: '(skill_spec IS NULL)', dir: 'asc', cast: 'boolean', read: (r) => r.skill_spec === null },
        { expr: "coalesce(skill_spec, '')", dir: order, cast: 'text', read: (r) => r.skill_spec ?? '' },
        id,
      ];
  }
}

interface CursorData {
  s: SortField;
  o: SortOrder;
  v: (string | boolean)[];
}

export function encodeCursor(data: CursorData): string {
  return Buffer.from(JSON.stringify(data), 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string, sortBy: SortField, sortOrder: SortOrder): CursorData {
  let data: CursorData;
  try {
    data = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as CursorData;
  } catch {
    throw new AppError('invalid_request', 'cursor is not a cursor this server issued');
  }
  if (!data || !Array.isArray(data.v) || data.s !== sortBy || data.o !== sortOrder) {
    throw new AppError('invalid_request', 'cursor belongs to another sort_by/sort_order; start again without cursor');
  }
  return data;
}

/**
 * `(k1, k2, …) after (v1, v2, …)`. With one direction for every key it is a row comparison, which PostgreSQL
 * turns into an index bound (a page deep in the list costs what the first page costs); mixed directions
 * (`agent`) need an OR of prefixes.
 */
function keysetPredicate(keys: SortKey[], values: (string | boolean)[], params: SqlValue[]): string {
  if (keys.every((k) => k.dir === keys[0]!.dir)) {
    const placeholders = keys.map((k, i) => {
      params.push(values[i]!);
      return `$${params.length}::${k.cast}`;
    });
    return `(${keys.map((k) => k.expr).join(', ')}) ${keys[0]!.dir === 'asc' ? '>' : '<'} (${placeholders.join(', ')})`;
  }
  const ors: string[] = [];
  for (let i = 0; i < keys.length; i++) {
    const ands: string[] = [];
    for (let j = 0; j < i; j++) {
      params.push(values[j]!);
      ands.push(`${keys[j]!.expr} = $${params.length}::${keys[j]!.cast}`);
    }
    params.push(values[i]!);
    ands.push(`${keys[i]!.expr} ${keys[i]!.dir === 'asc' ? '>' : '<'} $${params.length}::${keys[i]!.cast}`);
    ors.push(`(${ands.join(' AND ')})`);
  }
  return `(${ors.join(' OR ')})`;
}

/**
 * The states to read one by one, or undefined for one plain scan. The time sorts have no index of their own
 * without a state (migration 0007 dropped them: two index insertions fewer per run and per state change);
 * `(team, state, time)` serves them state by state instead, unless one state is asked for or, in update order,
 * another filter has a `(…, updated_at, id)` index of its own.
 */
function mergedStates(query: ListRunsQuery): readonly string[] | undefined {
  const f = query.filters;
  if (query.sortBy !== 'updated_at' && query.sortBy !== 'created_at') return undefined;
  if (f.states?.length === 1 || f.ancestorRunId !== undefined) return undefined;
  const ownIndex =
    f.configName !== undefined ||
    f.creator !== undefined ||
    f.executor !== undefined ||
    f.factoryId !== undefined ||
    f.scheduleId !== undefined;
  if (query.sortBy === 'updated_at' && ownIndex) return undefined;
  const wanted = f.states?.length ? new Set(f.states) : undefined;
  const states = RUN_STATES.filter((state) => !wanted || wanted.has(state));
  return states.length > 0 ? states : undefined;
}

export async function listRuns(
  q: Queryable,
  query: ListRunsQuery,
): Promise<{ rows: RunRow[]; nextCursor: string | undefined }> {
  const params: SqlValue[] = [query.teamId];
  const where: string[] = ['team_id = $1'];
  const add = (sql: (p: string) => string, value: SqlValue): void => {
    params.push(value);
    where.push(sql(`$${params.length}`));
  };
  const f = query.filters;
  const byState = mergedStates(query);
  // One state as an equality, so that the (team, state, time) indexes deliver the rows in order.
  if (f.states?.length === 1) add((p) => `state = ${p}`, f.states[0]!);
  else if (f.states?.length && !byState) add((p) => `state = ANY(${p}::text[])`, f.states);
  if (f.configName !== undefined) add((p) => `config_name = ${p}`, f.configName);
  if (f.modelId !== undefined) add((p) => `model_id = ${p}`, f.modelId);
  if (f.creator !== undefined) add((p) => `creator_id = ${p}`, f.creator);
  if (f.source !== undefined) add((p) => `source = ANY(${p}::text[])`, storedSourcesFor(f.source));
  if (f.executionLocation !== undefined) add((p) => `execution_location = ${p}`, f.executionLocation);
  if (f.createdAfter) add((p) => `created_at > ${p}`, f.createdAfter);
  if (f.createdBefore) add((p) => `created_at < ${p}`, f.createdBefore);
  if (f.updatedAfter) add((p) => `updated_at > ${p}`, f.updatedAfter);
  if (f.environmentId === 'empty-environment') where.push('environment_id IS NULL');
  else if (f.environmentId !== undefined) add((p) => `environment_id = ${p}`, f.environmentId);
  if (f.skillSpec !== undefined) add((p) => `skill_spec = ${p}`, f.skillSpec);
  if (f.scheduleId !== undefined) add((p) => `schedule_id = ${p}`, f.scheduleId);
  if (f.factoryId !== undefined) add((p) => `factory_id = ${p}`, f.factoryId);
  if (f.automationId !== undefined) add((p) => `automation_id = ${p}`, f.automationId);
  // executor_id is stored only when it differs from the creator (migration 0004).
  if (f.executor !== undefined)
    add((p) => `(executor_id = ${p} OR (executor_id IS NULL AND creator_id = ${p}))`, f.executor);
  if (f.workerHost !== undefined) add((p) => `worker_host = ${p}`, f.workerHost);
  if (f.artifactType !== undefined) {
    add(
      (p) =>
        `artifacts <> '[]'::jsonb AND artifacts @> jsonb_build_array(jsonb_build_object('artifact_type', ${p}::text))`,
      f.artifactType,
    );
  }
  if (f.metadata && Object.keys(f.metadata).length > 0)
    add((p) => `metadata @> ${p}::jsonb`, JSON.stringify(f.metadata));
  if (f.q !== undefined && f.q !== '') {
    const pattern = `%${f.q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    add((p) => `(title ILIKE ${p} OR prompt ILIKE ${p} OR coalesce(skill_spec, '') ILIKE ${p})`, pattern);
  }
  if (f.ancestorRunId !== undefined) {
    add(
      (p) => `id IN (WITH RECURSIVE descendants AS (
          SELECT id FROM runs WHERE parent_run_id = ${p} AND team_id = $1
          UNION SELECT r.id FROM runs r JOIN descendants d ON r.parent_run_id = d.id)
        SELECT id FROM descendants)`,
      f.ancestorRunId,
    );
  }
  const keys = sortKeys(query.sortBy, query.sortOrder);
  if (query.cursor) {
    const cursor = decodeCursor(query.cursor, query.sortBy, query.sortOrder);
    if (cursor.v.length !== keys.length) throw new AppError('invalid_request', 'cursor is malformed');
    where.push(keysetPredicate(keys, cursor.v, params));
  }
  const orderBy = keys.map((k) => `${k.expr} ${k.dir.toUpperCase()}`).join(', ');
  params.push(query.limit + 1);
  const limit = `$${params.length}`;
  let sql = `SELECT * FROM runs WHERE ${where.join(' AND ')} ORDER BY ${orderBy} LIMIT ${limit}`;
  if (byState) {
    // One ordered, limited branch per state over (team, state, time): PostgreSQL merges them (a Merge Append)
    // and reads about a page in all. Without the LIMIT in each branch it would plan each for all of its rows.
    const branches = byState.map((state) => {
      params.push(state);
      return `(SELECT * FROM runs WHERE ${where.join(' AND ')} AND state = $${params.length} ORDER BY ${orderBy} LIMIT ${limit})`;
    });
    sql = `SELECT * FROM (${branches.join(' UNION ALL ')}) AS runs ORDER BY ${orderBy} LIMIT ${limit}`;
  }
  const res = await q.query<RunRow>(sql, params);
  const rows = res.rows.slice(0, query.limit);
  const last = rows.at(-1);
  const nextCursor =
    res.rows.length > query.limit && last
      ? encodeCursor({ s: query.sortBy, o: query.sortOrder, v: keys.map((k) => k.read(last)) })
      : undefined;
  return { rows, nextCursor };
}
