/** /api/v1/integrations/{github|slack|linear}: a team's connection to a provider, its installations and delivery log. */
import { Type } from 'typebox';
import { requireTeamAdmin } from '../identity/guards.ts';
import type { AppInstance } from '../plugin.ts';
import type { ServiceContext } from '../context.ts';
import { AppError } from '../kernel/errors.ts';
import { getSecretMeta } from '../secrets/sql.ts';
import { checkSecretName } from '../secrets/service.ts';
import { newId } from '../kernel/ids.ts';
import { INTEGRATIONS_CHANGED_TOPIC, PROVIDERS } from './model.ts';
import type { ConnectionRow, Provider } from './model.ts';
import * as sql from './sql.ts';
import { providerOf, teamConnection } from './lookup.ts';

const TAGS = ['integrations'];

const ProviderParams = Type.Object({
  provider: Type.String({ description: `One of ${PROVIDERS.join(', ')}` }),
});

const ConnectionSchema = Type.Object({
  id: Type.String(),
  provider: Type.String(),
  /** github: `app` or `webhook`. */
  mode: Type.Optional(Type.String()),
  app_id: Type.Optional(Type.String()),
  webhook_secret_name: Type.Optional(Type.String()),
  private_key_secret_name: Type.Optional(Type.String()),
  signing_secret_name: Type.Optional(Type.String()),
  bot_token_secret_name: Type.Optional(Type.String()),
  api_key_secret_name: Type.Optional(Type.String()),
  events_url: Type.String({ description: "The URL to paste into the provider's webhook settings" }),
  last_event_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  last_event: Type.Union([Type.String(), Type.Null()]),
  last_error_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  last_error: Type.Union([Type.String(), Type.Null()]),
  installations: Type.Optional(
    Type.Array(
      Type.Object({
        installation_id: Type.String(),
        account_login: Type.Union([Type.String(), Type.Null()]),
        first_seen_at: Type.String({ format: 'date-time' }),
        last_seen_at: Type.String({ format: 'date-time' }),
      }),
    ),
  ),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
});

/** The body of each provider's PUT: which fields are secret names, which are plain settings, which are required. */
const FIELDS: Record<Provider, { secrets: string[]; required: string[]; plain: string[] }> = {
  github: {
    secrets: ['webhook_secret_name', 'private_key_secret_name'],
    required: ['mode', 'webhook_secret_name'],
    plain: ['mode', 'app_id'],
  },
  slack: { secrets: ['signing_secret_name', 'bot_token_secret_name'], required: ['signing_secret_name'], plain: [] },
  linear: { secrets: ['webhook_secret_name', 'api_key_secret_name'], required: ['webhook_secret_name'], plain: [] },
};

/** Checks a PUT body and answers the settings to store: secret names only, each naming an existing secret. */
async function checkSettings(
  ctx: ServiceContext,
  teamId: string,
  provider: Provider,
  body: unknown,
): Promise<Record<string, string>> {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new AppError('invalid_request', 'the body must be a JSON object');
  const input = body as Record<string, unknown>;
  const fields = FIELDS[provider];
  const known = new Set([...fields.secrets, ...fields.plain]);
  for (const key of Object.keys(input)) {
    if (!known.has(key))
      throw new AppError(
        'invalid_request',
        `\`${key}\` is not a field of a ${provider} connection (fields: ${[...known].join(', ')})`,
      );
  }
  const required = [...fields.required];
  if (provider === 'github') {
    if (input.mode !== 'app' && input.mode !== 'webhook')
      throw new AppError(
        'invalid_request',
        '`mode` must be "app" (a GitHub App) or "webhook" (a repository or organisation webhook)',
      );
    if (input.mode === 'app') required.push('app_id', 'private_key_secret_name');
    else if (input.app_id !== undefined || input.private_key_secret_name !== undefined)
      throw new AppError('invalid_request', '`app_id` and `private_key_secret_name` belong to mode "app"');
  }
  const settings: Record<string, string> = {};
  for (const key of required) {
    if (input[key] === undefined || input[key] === null || input[key] === '')
      throw new AppError('invalid_request', `\`${key}\` is required for a ${provider} connection`);
  }
  for (const [key, value] of Object.entries(input)) {
    if (value === undefined || value === null) continue;
    if (key === 'app_id') {
      const id = typeof value === 'number' ? String(value) : value;
      if (typeof id !== 'string' || !/^\d{1,20}$/.test(id))
        throw new AppError('invalid_request', '`app_id` must be the GitHub App ID (digits)');
      settings.app_id = id;
      continue;
    }
    if (typeof value !== 'string') throw new AppError('invalid_request', `\`${key}\` must be a string`);
    if (fields.secrets.includes(key)) {
      try {
        checkSecretName(value);
      } catch {
        throw new AppError('invalid_request', `\`${key}\`: "${value}" is not a managed-secret name`);
      }
      if (!(await getSecretMeta(ctx.db, teamId, value)))
        throw new AppError(
          'secret_not_found',
          `\`${key}\`: no managed secret named "${value}"; create it with PUT /api/v1/secrets/${value}`,
        );
    }
    settings[key] = value;
  }
  return settings;
}

export function eventsUrl(ctx: ServiceContext, row: Pick<ConnectionRow, 'id' | 'provider'>): string {
  return `${ctx.config.webhookBaseUrl}/integrations/${row.provider}/events/${row.id}`;
}

async function connectionView(ctx: ServiceContext, row: ConnectionRow) {
  const installations = row.provider === 'github' ? await sql.listInstallations(ctx.db, row.id) : undefined;
  return {
    id: row.id,
    provider: row.provider,
    ...row.settings,
    events_url: eventsUrl(ctx, row),
    last_event_at: row.last_event_at?.toISOString() ?? null,
    last_event: row.last_event,
    last_error_at: row.last_error_at?.toISOString() ?? null,
    last_error: row.last_error,
    ...(installations
      ? {
          installations: installations.map((i) => ({
            installation_id: i.installation_id,
            account_login: i.account_login,
            first_seen_at: i.first_seen_at.toISOString(),
            last_seen_at: i.last_seen_at.toISOString(),
          })),
        }
      : {}),
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export async function registerIntegrationRoutes(app: AppInstance, ctx: ServiceContext): Promise<void> {
  app.get(
    '/integrations',
    {
      schema: {
        tags: TAGS,
        summary: "The team's provider connections (secret names, never values)",
        response: { 200: Type.Object({ integrations: Type.Array(ConnectionSchema) }) },
      },
    },
    async (request) => {
      const rows = await sql.listTeamConnections(ctx.db, request.principal.teamId);
      return { integrations: await Promise.all(rows.map((row) => connectionView(ctx, row))) };
    },
  );

  app.get(
    '/integrations/:provider',
    {
      schema: {
        tags: TAGS,
        summary:
          'The connection: settings by secret name, its events URL, last event and error, GitHub App installations',
        params: ProviderParams,
        response: { 200: ConnectionSchema },
      },
    },
    async (request) =>
      connectionView(ctx, await teamConnection(ctx, request.principal.teamId, providerOf(request.params.provider))),
  );

  app.put(
    '/integrations/:provider',
    {
      schema: {
        tags: TAGS,
        summary: 'Connect the provider, or change the connection (team admins); secrets are named, never sent',
        params: ProviderParams,
        body: Type.Record(Type.String(), Type.Unknown()),
        response: { 200: ConnectionSchema },
      },
    },
    async (request) => {
      requireTeamAdmin(request);
      const provider = providerOf(request.params.provider);
      const teamId = request.principal.teamId;
      const settings = await checkSettings(ctx, teamId, provider, request.body);
      const { row } = await sql.upsertConnection(ctx.db, { id: newId('igc'), teamId, provider, settings });
      await ctx.bus.publish(INTEGRATIONS_CHANGED_TOPIC, { team_id: teamId, provider });
      return connectionView(ctx, row);
    },
  );

  app.delete(
    '/integrations/:provider',
    {
      schema: {
        tags: TAGS,
        summary: 'Disconnect the provider (team admins): its events URL answers 404 from now on',
        params: ProviderParams,
        response: { 200: ConnectionSchema },
      },
    },
    async (request) => {
      requireTeamAdmin(request);
      const provider = providerOf(request.params.provider);
      const row = await teamConnection(ctx, request.principal.teamId, provider);
      const view = await connectionView(ctx, row);
      await sql.deleteConnection(ctx.db, request.principal.teamId, provider);
      await ctx.bus.publish(INTEGRATIONS_CHANGED_TOPIC, { team_id: row.team_id, provider });
      return view;
    },
  );
}
