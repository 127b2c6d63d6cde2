/**
 * The execution queue's functions as a versioned install step (src/store/function-sets.ts): a fresh database
 * gets them after its migrations, a database migrated before the step gets them once, a newer version
 * replaces an older one and never the reverse, and starts at once on an empty database all succeed.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { EXECUTION_FUNCTIONS_VERSION, executionFunctions } from '../../src/engine/functions.ts';
import { claimRuns } from '../../src/engine/claim.ts';
import { harnessChoice } from '../../src/execution/settings.ts';
import type { Db } from '../../src/kernel/db.ts';
import { prepareDatabase } from '../../src/schema.ts';
import { openPostgres } from '../../src/store/pg.ts';
import { checksumOf, installFunctionSets } from '../../src/store/function-sets.ts';
import type { FunctionSet } from '../../src/store/function-sets.ts';
import { loadMigrations, migrate } from '../../src/store/migrate.ts';
import { createEmptyDatabase, ENGINES } from '../support/db.ts';
import type { TestDatabase } from '../support/db.ts';

/** Body (the text between `$$`) of each function a set's SQL defines, by `name/number of arguments`. */
function definitions(sql: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of sql.matchAll(/CREATE OR REPLACE FUNCTION (\w+)\(([^)]*)\)[\s\S]*?\$\$([\s\S]*?)\$\$;/g))
    out.set(`${m[1]!}/${m[2]!.split(',').length}`, m[3]!);
  return out;
}

/** The installed functions of these names, by `name/number of arguments`. */
async function bodies(db: Db, names: string[]): Promise<Map<string, { src: string; config: string[] }>> {
  const res = await db.query<{ proname: string; pronargs: number; prosrc: string; proconfig: string[] | null }>(
    'SELECT proname, pronargs, prosrc, proconfig FROM pg_proc WHERE proname = ANY($1::text[])',
    [names],
  );
  return new Map(res.rows.map((r) => [`${r.proname}/${r.pronargs}`, { src: r.prosrc, config: r.proconfig ?? [] }]));
}

const answerSet = (version: number, answer: number): FunctionSet => ({
  name: 'test_answer',
  version,
  sql: `CREATE OR REPLACE FUNCTION ay_test_answer() RETURNS integer LANGUAGE plpgsql AS $$\nBEGIN\n  RETURN ${answer};\nEND\n$$;\n`,
});

async function answer(db: Db): Promise<number> {
  return (await db.query<{ n: number }>('SELECT ay_test_answer() AS n')).rows[0]!.n;
}

const claimOptions = {
  limit: 4,
  harnesses: harnessChoice(['noop'], 'noop'),
  executor: 'service:test',
  leaseMs: 30_000,
};

describe('the execution function set', () => {
  it('defines its functions only: no migration after 0039 redefines one of them', async () => {
    const names = [...new Set([...definitions(executionFunctions().sql).keys()].map((k) => k.split('/')[0]!))];
    expect(names.length).toBe(11);
    for (const migration of (await loadMigrations()).filter((m) => m.id > 39)) {
      for (const name of names)
        expect(migration.sql, `${migration.name} defines ${name}`).not.toMatch(new RegExp(`FUNCTION ${name}\\b`));
    }
  });
});

describe.each(ENGINES)('function sets on %s', (engine) => {
  const open: TestDatabase[] = [];
  const empty = async (): Promise<TestDatabase> => {
    const t = await createEmptyDatabase(engine);
    open.push(t);
    return t;
  };
  afterEach(async () => {
    for (const t of open.splice(0)) await t.close();
  });

  it('a fresh database gets the migrations, then the execution functions as functions.sql defines them', async () => {
    const { db } = await empty();
    const result = await prepareDatabase(db);
    expect(result.applied.length).toBe((await loadMigrations()).length);
    expect(result.functions).toEqual([
      { name: 'execution', version: EXECUTION_FUNCTIONS_VERSION, status: 'installed' },
    ]);
    const set = executionFunctions();
    const recorded = await db.query('SELECT name, version, checksum FROM agentyard_function_sets');
    expect(recorded.rows).toEqual([{ name: 'execution', version: set.version, checksum: checksumOf(set.sql) }]);
    const wanted = definitions(set.sql);
    const found = await bodies(db, [...new Set([...wanted.keys()].map((k) => k.split('/')[0]!))]);
    for (const [name, body] of wanted) expect(found.get(name)?.src, name).toBe(body);
    expect(found.get('ay_end_executions/10')?.config).toEqual(
      expect.arrayContaining(['plan_cache_mode=force_generic_plan', 'enable_seqscan=off', 'enable_hashjoin=off']),
    );
    // the claim runs on the installed functions: nothing queued, nothing taken
    expect(await claimRuns(db, undefined, { kind: 'service' }, claimOptions)).toEqual([]);
    // the previous release's start (no locations) still answers, through the current one
    const previous = await db.query(
      `SELECT run_id FROM ay_start_executions('{}'::text[], '{}'::text[], '{}'::text[], '{}'::int[], '{}'::jsonb[],
         '{}'::text[], '{}'::text[], 'INPROGRESS', '{CLAIMED}'::text[])`,
    );
    expect(previous.rows).toEqual([]);
  });

  it('a database migrated before the install step gets the set once', async () => {
    const { db } = await empty();
    await migrate(db);
    // the migrations define none of the queue's functions: the install step does
    expect((await bodies(db, ['ay_claim_runs'])).size).toBe(0);

    expect((await prepareDatabase(db)).functions).toEqual([
      { name: 'execution', version: EXECUTION_FUNCTIONS_VERSION, status: 'installed' },
    ]);
    expect((await bodies(db, ['ay_claim_runs'])).size).toBe(1);
    const first = await db.query<{ installed_at: Date }>('SELECT installed_at FROM agentyard_function_sets');

    const again = await prepareDatabase(db);
    expect(again.applied).toEqual([]);
    expect(again.functions).toEqual([{ name: 'execution', version: EXECUTION_FUNCTIONS_VERSION, status: 'current' }]);
    const second = await db.query<{ installed_at: Date }>('SELECT installed_at FROM agentyard_function_sets');
    expect(second.rows).toEqual(first.rows);
  });

  it('installs a newer version, keeps a newer version from an older release, and a changed text of one version', async () => {
    const { db } = await empty();
    expect(await installFunctionSets(db, [answerSet(1, 1)])).toEqual([
      { name: 'test_answer', version: 1, status: 'installed' },
    ]);
    expect(await answer(db)).toBe(1);
    expect(await installFunctionSets(db, [answerSet(2, 2)])).toEqual([
      { name: 'test_answer', version: 2, status: 'installed' },
    ]);
    expect(await answer(db)).toBe(2);
    // an older release starting against this database leaves the newer set alone
    expect(await installFunctionSets(db, [answerSet(1, 1)])).toEqual([
      { name: 'test_answer', version: 2, status: 'newer' },
    ]);
    expect(await answer(db)).toBe(2);
    // the same version with another text (an edit without a version bump) is installed again
    expect((await installFunctionSets(db, [answerSet(2, 3)]))[0]?.status).toBe('installed');
    expect(await answer(db)).toBe(3);
    expect(await installFunctionSets(db, [answerSet(2, 3)])).toEqual([
      { name: 'test_answer', version: 2, status: 'current' },
    ]);
  });

  it('a set that fails to install leaves the previous version whole', async () => {
    const { db } = await empty();
    await installFunctionSets(db, [answerSet(1, 1)]);
    const broken: FunctionSet = {
      name: 'test_answer',
      version: 2,
      sql: `${answerSet(2, 2).sql}\nCREATE OR REPLACE FUNCTION ay_test_broken() RETURNS integer LANGUAGE sql AS $$ SELECT FROM nowhere_at_all $$;\n`,
    };
    await expect(installFunctionSets(db, [broken])).rejects.toThrow(/nowhere_at_all/);
    expect(await answer(db)).toBe(1);
    const recorded = await db.query<{ version: number }>(
      `SELECT version FROM agentyard_function_sets WHERE name = 'test_answer'`,
    );
    expect(recorded.rows).toEqual([{ version: 1 }]);
  });

  it('starts at once on an empty database all succeed, applying each migration and the set once', async () => {
    const first = await empty();
    // PostgreSQL: separate connection pools, as separate processes; PGlite: one engine, calls at once
    const dbs: Db[] = [first.db];
    for (let i = 0; i < 2; i++) {
      if (first.url) {
        const other = await openPostgres({ connectionString: first.url });
        open.unshift({ db: other, engine, url: first.url, close: () => other.close() });
        dbs.push(other);
      } else {
        dbs.push(first.db);
      }
    }
    const results = await Promise.all(dbs.map((db) => prepareDatabase(db)));
    const applied = results.flatMap((r) => r.applied);
    const all = (await loadMigrations()).map((m) => m.name);
    expect(applied.sort()).toEqual([...all].sort());
    const statuses = results.map((r) => r.functions[0]?.status).sort();
    expect(statuses).toEqual(['current', 'current', 'installed']);
    const recorded = await first.db.query('SELECT name, version FROM agentyard_function_sets');
    expect(recorded.rows).toEqual([{ name: 'execution', version: EXECUTION_FUNCTIONS_VERSION }]);
  });
});
