import { CREDENTIALS_REVOKED_TOPIC } from '../kernel/topics.ts';
import { Type } from 'typebox';
import type { AppInstance } from '../plugin.ts';
import type { ServiceContext } from '../context.ts';
import { requireTeamAdmin } from './guards.ts';
import { AppError } from '../kernel/errors.ts';
import type { Queryable } from '../kernel/db.ts';
import { newId } from '../kernel/ids.ts';
import * as sql from './sql.ts';
import type { AgentIdentityRow } from './sql.ts';

/**
 * Agent identities (`/agent/identities`): named service accounts that runs may execute as
 * (`agent_identity_uid` on run creation) and that API keys can be issued for (`POST /api-keys` with the
 * identity's `principal_id`). Newer clients send many optional members (description, prompt, skills,
 * worker_host, harness, ...); they are stored as given and answered back, but nothing here acts on them.
 */

/** Members that are the identity's own columns, never stored in `settings`. */
const RESERVED = new Set(['uid', 'name', 'available', 'created_at', 'updated_at', 'principal_id']);
const MAX_SETTINGS_BYTES = 64 * 1024;

const AgentResponseSchema = Type.Object(
  {
    uid: Type.String(),
    name: Type.String(),
    available: Type.Boolean(),
    principal_id: Type.String({ description: 'The service account this identity acts as (for POST /api-keys)' }),
    default_runner_uid: Type.String({ description: 'The runner runs of this agent use by default; empty: none' }),
    memory: Type.Object(
      { attached_stores: Type.Array(Type.Unknown()), auto_memory: Type.Object({ enabled: Type.Boolean() }) },
      { additionalProperties: true },
    ),
    secrets: Type.Array(Type.Object({ name: Type.String() })),
    skills: Type.Array(Type.String()),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: true },
);

const NAME = Type.String({ minLength: 1, maxLength: 100 });
const UidParams = Type.Object({ uid: Type.String({ minLength: 1 }) });

/** `secrets` as the clients declare them, `[{name}]`; a bare name is taken as `{name}`. */
function secretRefs(value: unknown): { name: string }[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((s) =>
    typeof s === 'string'
      ? [{ name: s }]
      : s && typeof s === 'object' && typeof s.name === 'string'
        ? [{ name: s.name }]
        : [],
  );
}

interface Memory {
  attached_stores: unknown[];
  auto_memory: { enabled: boolean; [key: string]: unknown };
}

/** The memory settings a client stored, when well-formed; otherwise none (no store attached, no auto memory). */
function memoryOf(value: unknown): Memory {
  const m = value as Partial<Memory> | null | undefined;
  return m && Array.isArray(m.attached_stores) && typeof m.auto_memory?.enabled === 'boolean'
    ? (m as Memory)
    : { attached_stores: [], auto_memory: { enabled: false } };
}

export function agentIdentityView(row: AgentIdentityRow) {
  const settings = row.settings;
  return {
    ...settings,
    // Members the clients require, from what the identity holds: no default runner, no memory store
    // (Agentyard has none), the secrets and skills it was given.
    default_runner_uid: typeof settings.default_runner_uid === 'string' ? settings.default_runner_uid : '',
    memory: memoryOf(settings.memory),
    secrets: secretRefs(settings.secrets),
    skills: Array.isArray(settings.skills) ? settings.skills.filter((s) => typeof s === 'string') : [],
    uid: row.id,
    name: row.name,
    available: true,
    principal_id: row.principal_id,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

function isEmpty(value: unknown): boolean {
  if (value === '') return true;
  if (Array.isArray(value)) return value.length === 0;
  return typeof value === 'object' && value !== null && Object.keys(value).length === 0;
}

/** Applies the optional members: `null` or absent leaves a member unchanged, an empty value clears it. */
export function mergeSettings(
  current: Record<string, unknown>,
  body: Record<string, unknown>,
): Record<string, unknown> {
  const next: Record<string, unknown> = { ...current };
  for (const [key, value] of Object.entries(body)) {
    if (RESERVED.has(key) || value === null || value === undefined) continue;
    if (isEmpty(value)) delete next[key];
    else next[key] = value;
  }
  if (Buffer.byteLength(JSON.stringify(next)) > MAX_SETTINGS_BYTES) {
    throw new AppError('invalid_request', `the agent's settings exceed ${MAX_SETTINGS_BYTES / 1024} KiB`);
  }
  return next;
}

/** The identity a run executes as, or a 404 naming the field. */
export async function resolveAgentIdentity(q: Queryable, teamId: string, uid: string): Promise<AgentIdentityRow> {
  const row = await sql.getAgentIdentity(q, teamId, uid);
  if (!row) throw new AppError('resource_not_found', `agent_identity_uid: agent ${uid} does not exist`);
  return row;
}

export async function registerAgentIdentityRoutes(app: AppInstance, ctx: ServiceContext): Promise<void> {
  app.post(
    '/agent/identities',
    {
      schema: {
        tags: ['agents'],
        operationId: 'createAgent',
        summary: 'Create an agent identity (team admins)',
        body: Type.Object({ name: NAME }, { additionalProperties: true }),
        response: { 201: AgentResponseSchema },
      },
    },
    async (request, reply) => {
      requireTeamAdmin(request);
      const teamId = request.principal.teamId;
      const body = request.body as Record<string, unknown> & { name: string };
      const settings = mergeSettings({}, body);
      const row = await ctx.db.transaction(async (tx) => {
        const principalId = newId('sa');
        await sql.insertPrincipal(tx, {
          id: principalId,
          teamId,
          kind: 'service_account',
          displayName: body.name,
          email: null,
        });
        return sql.insertAgentIdentity(tx, { id: newId('agt'), teamId, principalId, name: body.name, settings });
      });
      return reply.code(201).send(agentIdentityView(row));
    },
  );

  app.get(
    '/agent/identities',
    {
      schema: {
        tags: ['agents'],
        operationId: 'listAgentIdentities',
        summary: "List the team's agent identities",
        querystring: Type.Object({ factory_uid: Type.Optional(Type.String()) }, { additionalProperties: true }),
        response: { 200: Type.Object({ agents: Type.Array(AgentResponseSchema) }) },
      },
    },
    async (request) => ({
      agents: (await sql.listAgentIdentities(ctx.db, request.principal.teamId, request.query.factory_uid)).map(
        agentIdentityView,
      ),
    }),
  );

  app.get(
    '/agent/identities/:uid',
    {
      schema: {
        tags: ['agents'],
        operationId: 'getAgent',
        summary: 'Get an agent identity',
        params: UidParams,
        response: { 200: AgentResponseSchema },
      },
    },
    async (request) =>
      agentIdentityView(await resolveAgentIdentity(ctx.db, request.principal.teamId, request.params.uid)),
  );

  app.put(
    '/agent/identities/:uid',
    {
      schema: {
        tags: ['agents'],
        operationId: 'updateAgent',
        summary: 'Update an agent identity (team admins); null or absent members stay, empty values clear',
        params: UidParams,
        body: Type.Optional(
          Type.Object({ name: Type.Optional(Type.Union([NAME, Type.Null()])) }, { additionalProperties: true }),
        ),
        response: { 200: AgentResponseSchema },
      },
    },
    async (request) => {
      requireTeamAdmin(request);
      const teamId = request.principal.teamId;
      const body = (request.body ?? {}) as Record<string, unknown> & { name?: string | null };
      const row = await ctx.db.transaction(async (tx) => {
        const current = await resolveAgentIdentity(tx, teamId, request.params.uid);
        return sql.updateAgentIdentity(tx, teamId, current.id, {
          name: body.name ?? undefined,
          settings: mergeSettings(current.settings, body),
        });
      });
      return agentIdentityView(row!);
    },
  );

  app.delete(
    '/agent/identities/:uid',
    {
      schema: {
        tags: ['agents'],
        operationId: 'deleteAgent',
        summary: 'Delete an agent identity and its API keys (team admins)',
        params: UidParams,
        response: { 204: Type.Null() },
      },
    },
    async (request, reply) => {
      requireTeamAdmin(request);
      const deleted = await ctx.db.transaction((tx) =>
        sql.deleteAgentIdentity(tx, request.principal.teamId, request.params.uid),
      );
      if (!deleted) throw new AppError('resource_not_found', `agent ${request.params.uid} does not exist`);
      ctx.authenticator.invalidateAll();
      await ctx.bus.publish(CREDENTIALS_REVOKED_TOPIC, { agent_uid: request.params.uid });
      return reply.code(204).send(null);
    },
  );
}
