/**
 * Members' own provider identities (credentialStrategy CREATOR): what is stored, and who a token belongs to,
 * asked of the provider through its official client — GitHub `GET /user` (octokit), Slack `auth.test`
 * (@slack/web-api), Linear `viewer` (@linear/sdk) — so that a member can link only an account they hold.
 */
import { LinearClient } from '@linear/sdk';
import { WebClient } from '@slack/web-api';
import { Octokit } from 'octokit';
import type { Queryable, SqlValue } from '../kernel/db.ts';
import { githubApiUrl } from './github-token.ts';
import type { Provider } from './model.ts';
import { linearApiUrl, slackApiUrl } from './name-resolver.ts';

export interface IdentityRow {
  team_id: string;
  subject_id: string;
  subject_name: string;
  provider: Provider;
  secret_name: string;
  external_id: string;
  external_name: string | null;
  /** The secret's creator when it was linked: its token is lent only while that is still so (migration 0073). */
  secret_owner: string | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS =
  'team_id, subject_id, subject_name, provider, secret_name, external_id, external_name, secret_owner, created_at, updated_at';

/** The provider's account a token belongs to: its id (login for GitHub) and a readable name. */
export interface ProviderAccount {
  id: string;
  name: string | null;
}

/** Whom the provider says the token belongs to; throws the client's error when it refuses the token. */
export async function accountOfToken(provider: Provider, token: string): Promise<ProviderAccount> {
  if (provider === 'github') {
    const { data } = await new Octokit({
      auth: token,
      baseUrl: githubApiUrl(),
      retry: { enabled: false },
    }).rest.users.getAuthenticated();
    return { id: data.login, name: data.name ?? data.login };
  }
  if (provider === 'slack') {
    const answer = await new WebClient(token, { slackApiUrl: slackApiUrl(), retryConfig: { retries: 0 } }).auth.test();
    if (!answer.user_id) throw new Error('Slack answered auth.test without a user: use a user token (xoxp-…)');
    return { id: answer.user_id, name: answer.user ?? null };
  }
  const viewer = await new LinearClient({ apiKey: token, apiUrl: linearApiUrl() }).viewer;
  return { id: viewer.id, name: viewer.displayName || viewer.name || null };
}

export async function upsertIdentity(
  q: Queryable,
  row: Omit<IdentityRow, 'created_at' | 'updated_at'>,
): Promise<IdentityRow> {
  const res = await q.query<IdentityRow>(
    `INSERT INTO integration_identities (team_id, subject_id, subject_name, provider, secret_name, external_id, external_name,
        secret_owner)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (team_id, subject_id, provider) DO UPDATE SET subject_name = EXCLUDED.subject_name,
        secret_name = EXCLUDED.secret_name, external_id = EXCLUDED.external_id,
        external_name = EXCLUDED.external_name, secret_owner = EXCLUDED.secret_owner, updated_at = ay_now()
     RETURNING ${COLUMNS}`,
    [
      row.team_id,
      row.subject_id,
      row.subject_name,
      row.provider,
      row.secret_name,
      row.external_id,
      row.external_name,
      row.secret_owner,
    ],
  );
  return res.rows[0]!;
}

/** The first identity row the condition selects. */
async function identityWhere(q: Queryable, where: string, params: SqlValue[]): Promise<IdentityRow | undefined> {
  const res = await q.query<IdentityRow>(`SELECT ${COLUMNS} FROM integration_identities WHERE ${where}`, params);
  return res.rows[0];
}

export function getIdentity(
  q: Queryable,
  teamId: string,
  subjectId: string,
  provider: Provider,
): Promise<IdentityRow | undefined> {
  return identityWhere(q, 'team_id = $1 AND subject_id = $2 AND provider = $3', [teamId, subjectId, provider]);
}

/** The member who linked this provider account (an event's sender), if any. */
export function identityOfAccount(
  q: Queryable,
  teamId: string,
  provider: Provider,
  externalId: string,
): Promise<IdentityRow | undefined> {
  return identityWhere(q, 'team_id = $1 AND provider = $2 AND lower(external_id) = lower($3)', [
    teamId,
    provider,
    externalId,
  ]);
}

/** Every identity a member linked, by provider. */
export async function identitiesOfSubject(q: Queryable, teamId: string, subjectId: string): Promise<IdentityRow[]> {
  const res = await q.query<IdentityRow>(
    `SELECT ${COLUMNS} FROM integration_identities WHERE team_id = $1 AND subject_id = $2 ORDER BY provider`,
    [teamId, subjectId],
  );
  return res.rows;
}

/** Whether any identity of the team still names this secret. */
export async function secretLinked(q: Queryable, teamId: string, secretName: string): Promise<boolean> {
  const res = await q.query('SELECT 1 FROM integration_identities WHERE team_id = $1 AND secret_name = $2 LIMIT 1', [
    teamId,
    secretName,
  ]);
  return res.rows.length > 0;
}

export async function listIdentities(q: Queryable, teamId: string, provider: Provider): Promise<IdentityRow[]> {
  const res = await q.query<IdentityRow>(
    `SELECT ${COLUMNS} FROM integration_identities WHERE team_id = $1 AND provider = $2 ORDER BY subject_name, subject_id`,
    [teamId, provider],
  );
  return res.rows;
}

export async function deleteIdentity(
  q: Queryable,
  teamId: string,
  subjectId: string,
  provider: Provider,
): Promise<IdentityRow | undefined> {
  const res = await q.query<IdentityRow>(
    `DELETE FROM integration_identities WHERE team_id = $1 AND subject_id = $2 AND provider = $3 RETURNING ${COLUMNS}`,
    [teamId, subjectId, provider],
  );
  return res.rows[0];
}
