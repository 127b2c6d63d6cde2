/**
 * The data the authorization migrations carry over (docs/security.md, "Authorization between members and
 * admins"): runs the server created from provider events keep acting as their sender and runs created
 * through the API stop (0072); members' links to team secrets are removed, admins' stay (0073); API schedules
 * start their runs as their last writer (0074).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { loadMigrations, migrate } from '../../src/store/migrate.ts';
import { createEmptyDatabase, ENGINES } from '../support/db.ts';
import type { TestDatabase } from '../support/db.ts';

const CREATOR = { credential_strategy: 'CREATOR', provider: 'github', sender: 'octo-admin' };

describe.each(ENGINES)('authorization migrations on %s', (engine) => {
  let t: TestDatabase | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('move credentialStrategy out of metadata, drop members’ links to team secrets, attribute schedules', async () => {
    t = await createEmptyDatabase(engine);
    const db = t.db;
    const all = await loadMigrations();
    await migrate(
      db,
      all.filter((m) => m.id < 72),
    );
    await db.exec(`
      INSERT INTO teams (id, name) VALUES ('team_a', 'a');
      INSERT INTO principals (id, team_id, kind, display_name) VALUES
        ('usr_admin', 'team_a', 'user', 'admin'), ('sa_member', 'team_a', 'service_account', 'member');
      INSERT INTO api_keys (id, team_id, principal_id, name, prefix, key_hash, role) VALUES
        ('key_admin', 'team_a', 'usr_admin', 'admin', 'ayk_a', 'h1', 'admin'),
        ('key_member', 'team_a', 'sa_member', 'member', 'ayk_m', 'h2', 'member');
      INSERT INTO secrets (team_id, name, ciphertext) VALUES ('team_a', 'admin-github', '\\x00');
      INSERT INTO integration_identities (team_id, subject_id, subject_name, provider, secret_name, external_id) VALUES
        ('team_a', 'usr_admin', 'admin', 'github', 'admin-github', 'octo-admin'),
        ('team_a', 'sa_member', 'member', 'slack', 'admin-github', 'U1');
      INSERT INTO schedules (id, team_id, origin, name, cron_schedule, created_by, updated_by) VALUES
        ('sch_1', 'team_a', 'api', 'kept', '@daily', '{"type":"user","uid":"usr_admin","display_name":"admin"}',
          '{"type":"service_account","uid":"sa_member","display_name":"member"}'),
        ('sch_2', 'team_a', 'api', 'untouched', '@daily', '{"type":"user","uid":"usr_admin","display_name":"admin"}', NULL);
    `);
    for (const [id, source, delivery] of [
      ['run_event', 'GITHUB_ACTION', 'dlv_1'],
      ['run_api', 'API', null],
    ] as const) {
      await db.query(
        `INSERT INTO runs (id, team_id, title, prompt, state, source, session_id, metadata, delivery_id)
         VALUES ($1, 'team_a', 't', 'p', 'SUCCEEDED', $2, $1, $3, $4)`,
        [id, source, JSON.stringify(CREATOR), delivery],
      );
    }

    await migrate(db, all);

    const runs = await db.query<{ id: string; acts_as: unknown }>('SELECT id, acts_as FROM runs ORDER BY id');
    expect(runs.rows).toEqual([
      { id: 'run_api', acts_as: null },
      { id: 'run_event', acts_as: { provider: 'github', account: 'octo-admin' } },
    ]);
    const secrets = await db.query<{ created_by: string | null }>('SELECT created_by FROM secrets');
    expect(secrets.rows).toEqual([{ created_by: null }]);
    const links = await db.query<{ subject_id: string; secret_owner: string | null }>(
      'SELECT subject_id, secret_owner FROM integration_identities ORDER BY subject_id',
    );
    expect(links.rows).toEqual([{ subject_id: 'usr_admin', secret_owner: null }]);
    const schedules = await db.query<{ id: string; prompt_set_by: { uid: string } }>(
      'SELECT id, prompt_set_by FROM schedules ORDER BY id',
    );
    expect(schedules.rows.map((r) => [r.id, r.prompt_set_by.uid])).toEqual([
      ['sch_1', 'sa_member'],
      ['sch_2', 'usr_admin'],
    ]);
  });
});
