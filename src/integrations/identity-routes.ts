/**
 * /api/v1/integrations/{provider}/identities: members' own provider identities for credentialStrategy CREATOR.
 * A member links, reads and unlinks only their own (`/me`), with a token they send (stored as a managed secret
 * of theirs) or a secret they created; team admins list them all. Secret names only, never values.
 */
import { Type } from 'typebox';
import { requireTeamAdmin } from '../identity/guards.ts';
import type { Principal } from '../identity/principal.ts';
import type { AppInstance } from '../plugin.ts';
import type { ServiceContext } from '../context.ts';
import { AppError } from '../kernel/errors.ts';
import type { SecretProvider } from '../secrets/provider.ts';
import { isUniqueViolation } from '../store/errors.ts';
import { SECRETS_CHANGED_TOPIC } from '../kernel/topics.ts';
import { getSecretMeta } from '../secrets/sql.ts';
import type { SecretRow } from '../secrets/sql.ts';
import { checkSecretName, MAX_SECRET_BYTES } from '../secrets/service.ts';
import type { SecretService } from '../secrets/service.ts';
import { providerOf } from './lookup.ts';
import type { Provider } from './model.ts';
import * as identities from './identities.ts';
import type { IdentityRow } from './identities.ts';

const TAGS = ['integrations'];

const ProviderParams = Type.Object({ provider: Type.String({ description: 'github, slack or linear' }) });

const IdentitySchema = Type.Object({
  provider: Type.String(),
  member: Type.Object({ id: Type.String(), display_name: Type.String() }),
  secret_name: Type.String({ description: "The managed secret holding the member's token (never its value)" }),
  account_id: Type.String({ description: 'GitHub login, Slack user id or Linear user id, as the provider answered' }),
  account_name: Type.Union([Type.String(), Type.Null()]),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
});

function view(row: IdentityRow) {
  return {
    provider: row.provider,
    member: { id: row.subject_id, display_name: row.subject_name },
    secret_name: row.secret_name,
    account_id: row.external_id,
    account_name: row.external_name,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

async function ownIdentity(ctx: ServiceContext, principal: Principal, provider: Provider): Promise<IdentityRow> {
  const row = await identities.getIdentity(ctx.db, principal.teamId, principal.subject.id, provider);
  if (!row)
    throw new AppError(
      'resource_not_found',
      `you have not linked a ${provider} identity; link one with PUT /api/v1/integrations/${provider}/identities/me`,
    );
  return row;
}

/** Whether the provider refused the token (as opposed to not answering). */
function refused(err: unknown): boolean {
  const e = err as { status?: unknown; code?: unknown; type?: unknown; message?: unknown } | null;
  if (typeof e?.status === 'number' && e.status >= 400 && e.status < 500) return true;
  if (e?.code === 'slack_webapi_platform_error') return true;
  return typeof e?.type === 'string' && /auth|forbidden/i.test(e.type);
}

/** Whether the caller may link (or overwrite) this secret: a team admin any, a member only one they created. */
function mayUse(principal: Principal, secret: SecretRow): boolean {
  return principal.role === 'admin' || principal.instanceAdmin || secret.created_by === principal.subject.id;
}

function notOwned(name: string): AppError {
  return new AppError(
    'secret_not_owned',
    `\`secret_name\`: the managed secret "${name}" is not yours to link (a member links a secret they created, or sends their token as \`token\`)`,
  );
}

/** The secret a token sent with the link is stored in when the body names none. */
const ownSecretName = (provider: Provider, principal: Principal) => `${provider}-identity-${principal.subject.id}`;

export async function registerProviderIdentityRoutes(
  app: AppInstance,
  ctx: ServiceContext & { managedSecrets: SecretService },
  secrets: SecretProvider,
): Promise<void> {
  app.get(
    '/integrations/:provider/identities',
    {
      schema: {
        tags: TAGS,
        summary: "The team's members' linked identities for the provider (team admins; secret names only)",
        params: ProviderParams,
        response: { 200: Type.Object({ identities: Type.Array(IdentitySchema) }) },
      },
    },
    async (request) => {
      requireTeamAdmin(request);
      const provider = providerOf(request.params.provider);
      const rows = await identities.listIdentities(ctx.db, request.principal.teamId, provider);
      return { identities: rows.map(view) };
    },
  );

  app.get(
    '/integrations/:provider/identities/me',
    {
      schema: {
        tags: TAGS,
        summary: 'Your linked identity for the provider',
        params: ProviderParams,
        response: { 200: IdentitySchema },
      },
    },
    async (request) => view(await ownIdentity(ctx, request.principal, providerOf(request.params.provider))),
  );

  app.put(
    '/integrations/:provider/identities/me',
    {
      schema: {
        tags: TAGS,
        summary:
          'Link your own provider token for runs whose credentialStrategy is CREATOR: `token` (stored as a managed secret of yours, `secret_name` or `<provider>-identity-<your principal id>`) or `secret_name` of a secret you created; the provider is asked whose it is',
        params: ProviderParams,
        body: Type.Record(Type.String(), Type.Unknown()),
        response: { 200: IdentitySchema },
      },
    },
    async (request) => {
      const provider = providerOf(request.params.provider);
      const { principal } = request;
      const body = request.body;
      for (const key of Object.keys(body)) {
        if (key !== 'secret_name' && key !== 'token')
          throw new AppError(
            'invalid_request',
            `\`${key}\` is not a field of an identity (fields: token, secret_name)`,
          );
      }
      const sent = body.token;
      if (sent !== undefined && (typeof sent !== 'string' || sent.trim() === ''))
        throw new AppError('invalid_request', '`token` must be your non-empty token for the provider');
      if (typeof sent === 'string' && Buffer.byteLength(sent, 'utf8') > MAX_SECRET_BYTES)
        throw new AppError('invalid_request', `\`token\` must be at most ${MAX_SECRET_BYTES / 1024} KiB`);
      if (sent === undefined && body.secret_name === undefined)
        throw new AppError(
          'invalid_request',
          '`token` (your token, stored as a managed secret of yours) or `secret_name` (a managed secret you created) is required',
        );
      const name = body.secret_name ?? ownSecretName(provider, principal);
      if (typeof name !== 'string' || name === '')
        throw new AppError('invalid_request', '`secret_name` must be a managed-secret name');
      try {
        checkSecretName(name);
      } catch {
        throw new AppError('invalid_request', `\`secret_name\`: "${name}" is not a managed-secret name`);
      }
      const existing = await getSecretMeta(ctx.db, principal.teamId, name);
      if (existing && !mayUse(principal, existing)) throw notOwned(name);
      let token: string | undefined;
      if (typeof sent === 'string') token = sent.trim();
      else {
        if (!existing)
          throw new AppError(
            'secret_not_found',
            `\`secret_name\`: no managed secret named "${name}"; send your token as \`token\` instead`,
          );
        token = (await secrets.get(principal.teamId, name))?.trim();
        if (!token) throw new AppError('invalid_request', `\`secret_name\`: the managed secret "${name}" is empty`);
      }
      let account: identities.ProviderAccount;
      try {
        account = await identities.accountOfToken(provider, token);
      } catch (err) {
        if (refused(err))
          throw new AppError(
            'provider_token_rejected',
            `${provider} refused the token${typeof sent === 'string' ? '' : ` in "${name}"`}: ${(err as Error).message}`,
          );
        throw new AppError('provider_unreachable', `${provider} could not be asked whose the token is; try again`, {
          cause: err,
        });
      }
      const holder = await identities.identityOfAccount(ctx.db, principal.teamId, provider, account.id);
      if (holder && holder.subject_id !== principal.subject.id)
        throw new AppError(
          'provider_identity_taken',
          `the ${provider} account ${account.id} is linked by another member of the team`,
        );
      if (typeof sent === 'string') {
        // stored only once the provider has said whose it is; the caller owns the secret
        // (a member's write replaces only a secret they own, however the table changed since the check above)
        await ctx.managedSecrets.put(principal.teamId, name, token, principal.subject.id, {
          ownedOnly: principal.role !== 'admin' && !principal.instanceAdmin,
        });
        await ctx.bus.publish(SECRETS_CHANGED_TOPIC, { team_id: principal.teamId, name });
      }
      try {
        const row = await identities.upsertIdentity(ctx.db, {
          team_id: principal.teamId,
          subject_id: principal.subject.id,
          subject_name: principal.subject.displayName,
          provider,
          secret_name: name,
          external_id: account.id,
          external_name: account.name,
          secret_owner: typeof sent === 'string' ? principal.subject.id : (existing?.created_by ?? null),
        });
        return view(row);
      } catch (err) {
        // Two members linking the same account at once: the unique index decides.
        if (isUniqueViolation(err))
          throw new AppError(
            'provider_identity_taken',
            `the ${provider} account ${account.id} is linked by another member of the team`,
          );
        throw err;
      }
    },
  );

  app.delete(
    '/integrations/:provider/identities/me',
    {
      schema: {
        tags: TAGS,
        summary:
          'Unlink your identity for the provider; the secret holding your token is deleted when it is yours and no other link names it',
        params: ProviderParams,
        response: { 200: IdentitySchema },
      },
    },
    async (request) => {
      const provider = providerOf(request.params.provider);
      const row = await ownIdentity(ctx, request.principal, provider);
      await identities.deleteIdentity(ctx.db, row.team_id, row.subject_id, provider);
      // a member cannot delete secrets otherwise: their token does not outlive its last link
      const secret = await getSecretMeta(ctx.db, row.team_id, row.secret_name);
      if (
        secret?.created_by === row.subject_id &&
        !(await identities.secretLinked(ctx.db, row.team_id, row.secret_name))
      ) {
        await ctx.managedSecrets.delete(row.team_id, row.secret_name).catch(() => undefined);
        await ctx.bus.publish(SECRETS_CHANGED_TOPIC, { team_id: row.team_id, name: row.secret_name });
      }
      return view(row);
    },
  );
}
