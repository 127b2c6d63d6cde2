import type { FastifyRequest } from 'fastify';
import type { AppInstance } from '../plugin.ts';
import type { CreatorInfo } from './model.ts';
import { toScheduledAgentItem } from './model.ts';
import * as schemas from './schemas.ts';
import type { ScheduleCaller, ScheduleService } from './service.ts';
import type { Queryable } from '../kernel/db.ts';
import type { RunSecretsCheck } from '../runs/secret-names.ts';

function callerOf(request: FastifyRequest): CreatorInfo {
  const s = request.principal.subject;
  return { type: s.type, uid: s.id, display_name: s.displayName, ...(s.email ? { email: s.email } : {}) };
}

/** The caller of a change: a schedule is changed by its creator or a team admin. */
function changerOf(request: FastifyRequest): ScheduleCaller {
  const p = request.principal;
  return { info: callerOf(request), admin: p.role === 'admin' || p.instanceAdmin };
}

const tags = ['schedules'];
const item = { 200: schemas.ScheduledAgentItemSchema };

/** `/agent/schedules` as the Oz API defines it (create 201, PUT = full replacement, DELETE → {success}). */
export async function registerScheduleRoutes(
  app: AppInstance,
  schedules: ScheduleService,
  checkSecrets: RunSecretsCheck,
  db: Queryable,
): Promise<void> {
  app.post(
    '/agent/schedules',
    {
      schema: {
        tags,
        operationId: 'createScheduledAgent',
        summary: 'Create a scheduled agent: a prompt and agent configuration started as a run at every fire',
        body: schemas.CreateScheduleRequestSchema,
        response: { 201: schemas.ScheduledAgentItemSchema },
      },
    },
    async (request, reply) => {
      await checkSecrets(db, request.principal, request.body.agent_config);
      const row = await schedules.create(request.principal.teamId, callerOf(request), request.body);
      return reply.code(201).send(toScheduledAgentItem(row));
    },
  );

  app.get(
    '/agent/schedules',
    {
      schema: {
        tags,
        operationId: 'listScheduledAgents',
        summary: "The team's schedules, sorted by name",
        response: { 200: schemas.ListSchedulesResponseSchema },
      },
    },
    async (request) => ({ schedules: (await schedules.list(request.principal.teamId)).map(toScheduledAgentItem) }),
  );

  app.get(
    '/agent/schedules/:scheduleId',
    {
      schema: {
        tags,
        operationId: 'getScheduledAgent',
        summary: 'One schedule, with its next and last fire',
        params: schemas.ScheduleIdParamsSchema,
        response: item,
      },
    },
    async (request) => toScheduledAgentItem(await schedules.get(request.principal.teamId, request.params.scheduleId)),
  );

  app.put(
    '/agent/schedules/:scheduleId',
    {
      schema: {
        tags,
        operationId: 'updateScheduledAgent',
        summary:
          'Replace a schedule (its creator or a team admin; every field, an absent agent_config clears it). Whoever changes the prompt or agent_config becomes the creator of its runs',
        params: schemas.ScheduleIdParamsSchema,
        body: schemas.UpdateScheduleRequestSchema,
        response: item,
      },
    },
    async (request) => {
      await checkSecrets(db, request.principal, request.body.agent_config);
      return toScheduledAgentItem(
        await schedules.replace(request.principal.teamId, request.params.scheduleId, changerOf(request), request.body),
      );
    },
  );

  app.delete(
    '/agent/schedules/:scheduleId',
    {
      schema: {
        tags,
        operationId: 'deleteScheduledAgent',
        summary: 'Delete a schedule (its creator or a team admin); runs it started stay',
        params: schemas.ScheduleIdParamsSchema,
        response: { 200: schemas.DeleteScheduleResponseSchema },
      },
    },
    async (request) => {
      await schedules.delete(request.principal.teamId, request.params.scheduleId, changerOf(request));
      return { success: true };
    },
  );

  app.post(
    '/agent/schedules/:scheduleId/pause',
    {
      schema: {
        tags,
        operationId: 'pauseScheduledAgent',
        summary: 'Pause a schedule (its creator or a team admin): it does not fire until resumed',
        params: schemas.ScheduleIdParamsSchema,
        response: item,
      },
    },
    async (request) =>
      toScheduledAgentItem(
        await schedules.setEnabled(request.principal.teamId, request.params.scheduleId, changerOf(request), false),
      ),
  );

  app.post(
    '/agent/schedules/:scheduleId/resume',
    {
      schema: {
        tags,
        operationId: 'resumeScheduledAgent',
        summary:
          'Resume a paused schedule (its creator or a team admin); the next fire is the first slot after now (missed slots are not replayed)',
        params: schemas.ScheduleIdParamsSchema,
        response: item,
      },
    },
    async (request) =>
      toScheduledAgentItem(
        await schedules.setEnabled(request.principal.teamId, request.params.scheduleId, changerOf(request), true),
      ),
  );
}
