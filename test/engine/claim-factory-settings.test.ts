/**
 * What a claim reads of a run's factory (ay_claim_locked's `factory`, from `factories.run_settings`, migration
 * 0094): the image, limits and network of the runner the run names, else of its agent's runner; the secrets of
 * its automation, else of its agent, else of the factory; the factory's integrations. The first of two entries
 * of one name wins; a definition changed later is read as changed; a factory's tally is written when its run
 * ends, not when it is claimed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as engine from '../../src/engine/engine.ts';
import type { InsertRun } from '../../src/engine/engine.ts';
import { claimRuns } from '../../src/engine/claim.ts';
import type { ClaimOptions } from '../../src/engine/claim.ts';
import { newId } from '../../src/kernel/ids.ts';
import { createTestDatabase, ENGINES } from '../support/db.ts';
import type { TestDatabase } from '../support/db.ts';
import { queuedRun } from '../support/run-rows.ts';

const OPTIONS: ClaimOptions = {
  limit: 20,
  harnesses: { spellings: ['noop', 'oz'], types: ['noop', 'noop'] },
  executor: 'service:test',
  leaseMs: 60_000,
};

const DEFINITION = {
  factory: { secrets: ['FACTORY_KEY'], integrations: [{ type: 'slack' }] },
  agents: [
    { name: 'triage', prompt: 'long text', execution: { runner: 'linux', secrets: ['TRIAGE_KEY'] } },
    { name: 'plain', execution: { runner: 'gpu' } },
    { name: 'bare' },
    { name: 'triage', execution: { runner: 'gpu', secrets: ['SHADOWED'] } },
  ],
  runners: [
    { name: 'linux', platform: { os: 'linux', dockerImage: 'ghcr.io/acme/linux:1' }, limits: { cpu: 2 } },
    { name: 'gpu', platform: { os: 'linux', dockerImage: 'ghcr.io/acme/gpu:2' }, network: { egress: 'none' } },
    { name: 'linux', platform: { os: 'linux', dockerImage: 'shadowed' } },
    'not an object',
  ],
  automations: [{ name: 'nightly', prompt: 'x', execution: { secrets: ['NIGHTLY_KEY'] } }],
};

describe.each(ENGINES)("a claim reads its run's factory settings on %s", (engineName) => {
  let t: TestDatabase;
  let teamId: string;
  let factoryId: string;
  let automationId: string;

  beforeAll(async () => {
    t = await createTestDatabase(engineName);
    teamId = newId('team');
    factoryId = newId('fac');
    automationId = newId('auto');
    await t.db.query('INSERT INTO teams (id, name) VALUES ($1, $2)', [teamId, `team ${teamId}`]);
    await t.db.query(`INSERT INTO factories (id, team_id, name, source, definition) VALUES ($1, $2, $3, '{}', $4)`, [
      factoryId,
      teamId,
      `factory ${factoryId}`,
      JSON.stringify(DEFINITION),
    ]);
    await t.db.query(
      `INSERT INTO automations (id, team_id, factory_id, name, file, prompt) VALUES ($1, $2, $3, 'nightly', 'f', 'x')`,
      [automationId, teamId, factoryId],
    );
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  const row = (config: Record<string, unknown>, over: Partial<InsertRun> = {}): InsertRun =>
    queuedRun(teamId, { config, factoryId, ...over });

  async function claimed(rows: InsertRun[]) {
    await engine.insertRuns(t.db, rows);
    const taken = await claimRuns(t.db, undefined, { kind: 'service' }, OPTIONS);
    return new Map(taken.map((c) => [c.run.id, c.inputs.factory]));
  }

  it('reads the runner, secrets and integrations the run resolves to, the first entry of a name winning', async () => {
    const byAgent = row({ name: 'triage' });
    const named = row({ name: 'triage', runner_id: 'gpu' });
    const ofAutomation = row({ name: 'triage' }, { automationId });
    const noSecrets = row({ name: 'plain' });
    const noExecution = row({ name: 'bare' });
    const unknown = row({ name: 'nobody', runner_id: 'nowhere' });
    const outside = row({ name: 'triage' }, { factoryId: null });
    const got = await claimed([byAgent, named, ofAutomation, noSecrets, noExecution, unknown, outside]);
    const integrations = [{ type: 'slack' }];
    expect(got.get(byAgent.id)).toEqual({
      image: 'ghcr.io/acme/linux:1',
      limits: { cpu: 2 },
      network: null,
      secrets: ['TRIAGE_KEY'],
      integrations,
    });
    expect(got.get(named.id)).toEqual({
      image: 'ghcr.io/acme/gpu:2',
      limits: null,
      network: { egress: 'none' },
      secrets: ['TRIAGE_KEY'],
      integrations,
    });
    expect(got.get(ofAutomation.id)).toMatchObject({ image: 'ghcr.io/acme/linux:1', secrets: ['NIGHTLY_KEY'] });
    expect(got.get(noSecrets.id)).toMatchObject({ image: 'ghcr.io/acme/gpu:2', secrets: ['FACTORY_KEY'] });
    expect(got.get(noExecution.id)).toEqual({
      image: null,
      limits: null,
      network: null,
      secrets: ['FACTORY_KEY'],
      integrations,
    });
    expect(got.get(unknown.id)).toEqual({
      image: null,
      limits: null,
      network: null,
      secrets: ['FACTORY_KEY'],
      integrations,
    });
    expect(got.get(outside.id)).toBeNull();
  });

  it('reads a definition applied later as it is now, and nothing of a deleted factory', async () => {
    await t.db.query(`UPDATE factories SET definition = $2 WHERE id = $1`, [
      factoryId,
      JSON.stringify({ ...DEFINITION, factory: {}, runners: [{ name: 'linux', platform: { dockerImage: 'v2' } }] }),
    ]);
    const after = row({ name: 'triage' });
    expect((await claimed([after])).get(after.id)).toEqual({
      image: 'v2',
      limits: null,
      network: null,
      secrets: ['TRIAGE_KEY'],
      integrations: null,
    });
    await t.db.query(`UPDATE factories SET deleted_at = ay_now() WHERE id = $1`, [factoryId]);
    const deleted = row({ name: 'triage' });
    expect((await claimed([deleted])).get(deleted.id)).toBeNull();
    await t.db.query(`UPDATE factories SET deleted_at = NULL, definition = $2 WHERE id = $1`, [
      factoryId,
      JSON.stringify(DEFINITION),
    ]);
  });

  it("writes a factory run's tally when it ends or its usage changes, not when it is claimed or started", async () => {
    const run = row({ name: 'triage' });
    await claimed([run]);
    const tallies = async () =>
      (
        await t.db.query<{ state: string; ended: number }>(
          'SELECT state, ended FROM factory_run_tallies WHERE factory_id = $1 ORDER BY id',
          [factoryId],
        )
      ).rows;
    const before = await tallies();
    await t.db.query(`UPDATE runs SET state = 'INPROGRESS' WHERE id = $1`, [run.id]);
    expect(await tallies()).toEqual(before);
    await t.db.query(`UPDATE runs SET request_usage = '{"input_tokens": 5}' WHERE id = $1`, [run.id]);
    await t.db.query(`UPDATE runs SET state = 'SUCCEEDED' WHERE id = $1`, [run.id]);
    expect((await tallies()).slice(before.length)).toEqual([
      { state: 'INPROGRESS', ended: 0 },
      { state: 'SUCCEEDED', ended: 1 },
    ]);
  });
});
