import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveSkill } from '../../src/execution/skills.ts';
import { createTestDatabase, ENGINES } from '../support/db.ts';
import type { TestDatabase } from '../support/db.ts';

describe.each(ENGINES)('skill resolution on %s', (engine) => {
  let t: TestDatabase;
  const run = (
    over: Partial<{
      team_id: string;
      factory_id: string | null;
      automation_id: string | null;
      config_name: string | null;
    }> = {},
  ) => ({
    team_id: 'team_s',
    factory_id: null,
    automation_id: null,
    config_name: null,
    ...over,
  });

  beforeAll(async () => {
    t = await createTestDatabase(engine);
    const { db } = t;
    await db.query(`INSERT INTO teams (id, name) VALUES ('team_s', 'skills'), ('team_empty', 'empty')`);
    // team factories are looked in by name: "alpha" before "beta"
    await db.query(
      `INSERT INTO factories (id, team_id, name, source) VALUES ('fac_b', 'team_s', 'beta', '{}'), ('fac_a', 'team_s', 'alpha', '{}'),
         ('fac_gone', 'team_s', 'aaa-deleted', '{}')`,
    );
    await db.query(`UPDATE factories SET deleted_at = ay_now() WHERE id = 'fac_gone'`);
    const files: [string, string, string][] = [
      ['fac_gone', 'skills/triage/SKILL.md', 'deleted factory'],
      ['fac_a', 'skills/triage/SKILL.md', 'alpha shared triage'],
      ['fac_a', 'skills/triage/notes/b.md', 'b'],
      ['fac_a', 'skills/triage/a.md', 'a'],
      ['fac_a', 'skills/triage-more/SKILL.md', 'not the same directory'],
      ['fac_b', 'skills/triage/SKILL.md', 'beta shared triage'],
      ['fac_b', 'agents/bot/skills/triage/SKILL.md', 'beta bot triage'],
      ['fac_b', 'SKILL.md', 'root skill'],
      ['fac_b', 'README.md', 'root readme'],
      ['fac_b', 'docs/guide.md', 'nested, not part of a root skill'],
    ];
    await db.query(
      `INSERT INTO factory_files (factory_id, path, content) SELECT * FROM unnest($1::text[], $2::text[], $3::text[])`,
      [files.map((f) => f[0]), files.map((f) => f[1]), files.map((f) => f[2])],
    );
    await db.query(
      `INSERT INTO automations (id, team_id, factory_id, name, file, prompt, agent) VALUES
         ('aut_bot', 'team_s', 'fac_b', 'a1', 'f.yaml', 'p', 'bot'), ('aut_none', 'team_s', 'fac_b', 'a2', 'f.yaml', 'p', NULL)`,
    );
  });
  afterAll(async () => {
    await t?.close();
  });

  it("takes the first of the team's factories by name that has the skill, with its files in path order", async () => {
    expect(await resolveSkill(t.db, run(), 'repo:triage')).toEqual({
      spec: 'repo:triage',
      name: 'triage',
      resolved: true,
      source: 'factory alpha: skills/triage/SKILL.md',
      files: [
        { path: 'SKILL.md', content: 'alpha shared triage' },
        { path: 'a.md', content: 'a' },
        { path: 'notes/b.md', content: 'b' },
      ],
    });
  });

  it("looks in the agent's own skills first: the automation's agent, else the configuration's name", async () => {
    const byAutomation = await resolveSkill(
      t.db,
      run({ factory_id: 'fac_b', automation_id: 'aut_bot', config_name: 'other' }),
      'repo:triage',
    );
    expect(byAutomation).toMatchObject({ resolved: true, source: 'factory beta: agents/bot/skills/triage/SKILL.md' });
    const byConfig = await resolveSkill(
      t.db,
      run({ factory_id: 'fac_b', automation_id: 'aut_none', config_name: 'bot' }),
      'repo:triage',
    );
    expect(byConfig).toMatchObject({ resolved: true, source: 'factory beta: agents/bot/skills/triage/SKILL.md' });
    const noAgent = await resolveSkill(t.db, run({ factory_id: 'fac_b', automation_id: 'aut_none' }), 'repo:triage');
    expect(noAgent).toMatchObject({ resolved: true, source: 'factory beta: skills/triage/SKILL.md' });
  });

  it('takes a path to a SKILL.md as it is, including one at the root (its top-level files only)', async () => {
    expect(
      await resolveSkill(t.db, run({ factory_id: 'fac_b' }), 'repo:agents/bot/skills/triage/SKILL.md'),
    ).toMatchObject({
      name: 'triage',
      resolved: true,
      source: 'factory beta: agents/bot/skills/triage/SKILL.md',
      files: [{ path: 'SKILL.md', content: 'beta bot triage' }],
    });
    expect(await resolveSkill(t.db, run({ factory_id: 'fac_b' }), 'tools:SKILL.md')).toEqual({
      spec: 'tools:SKILL.md',
      name: 'tools',
      resolved: true,
      source: 'factory beta: SKILL.md',
      files: [
        { path: 'README.md', content: 'root readme' },
        { path: 'SKILL.md', content: 'root skill' },
      ],
    });
  });

  it('says where it looked when no factory has the skill, and when the run has no factory at all', async () => {
    expect(await resolveSkill(t.db, run({ config_name: 'bot' }), 'repo:nope')).toEqual({
      spec: 'repo:nope',
      name: 'nope',
      resolved: false,
      reason: 'no agents/bot/skills/nope/SKILL.md, skills/nope/SKILL.md in factory alpha, beta',
    });
    expect(await resolveSkill(t.db, run({ team_id: 'team_empty' }), 'repo:triage')).toEqual({
      spec: 'repo:triage',
      name: 'triage',
      resolved: false,
      reason: 'the run belongs to no factory, and skills are read from factory files only',
    });
  });
});
