import { Type } from 'typebox';
import type { AgentConfig } from '../runs/model.ts';
import { AgentConfigSchema } from '../runs/schemas.ts';

const Str = Type.String();
const OptStr = Type.Optional(Type.String());
const DateTime = Type.String({ format: 'date-time' });
const NullableDateTime = Type.Union([DateTime, Type.Null()]);

const CreatorInfoSchema = Type.Object({
  type: Type.Union([Type.Literal('user'), Type.Literal('service_account')]),
  uid: Str,
  display_name: Str,
  email: OptStr,
});

const Metadata = Type.Record(Type.String(), Type.String());

const scheduleBody = {
  name: Type.String({ description: 'Shown in lists; schedules are listed by name' }),
  cron_schedule: Type.String({
    description:
      'When it fires, in UTC: 5 fields (minute hour day-of-month month day-of-week), or @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly, @every <duration> (e.g. @every 15m)',
  }),
  prompt: Type.Optional(
    Type.String({ description: 'What each run is told; required unless agent_config.skill_spec is set' }),
  ),
  agent_config: Type.Optional(AgentConfigSchema),
  metadata: Type.Optional(
    Type.Record(Type.String(), Type.String(), { description: 'Copied onto every run the schedule starts' }),
  ),
};

export const CreateScheduleRequestSchema = Type.Object({
  ...scheduleBody,
  enabled: Type.Optional(Type.Boolean({ default: true })),
  team: Type.Optional(
    Type.Boolean({ description: 'Accepted for compatibility; every schedule belongs to the team of the API key' }),
  ),
});

export const UpdateScheduleRequestSchema = Type.Object({
  ...scheduleBody,
  enabled: Type.Boolean(),
});

export const ScheduledAgentItemSchema = Type.Object(
  {
    id: Str,
    name: Str,
    cron_schedule: Str,
    enabled: Type.Boolean(),
    prompt: Str,
    created_at: DateTime,
    updated_at: DateTime,
    last_spawn_error: Type.Union([Str, Type.Null()]),
    agent_config: Type.Unsafe<AgentConfig>({ type: 'object', additionalProperties: true }),
    created_by: Type.Optional(CreatorInfoSchema),
    updated_by: Type.Optional(CreatorInfoSchema),
    prompt_set_by: Type.Optional({
      ...CreatorInfoSchema,
      description:
        'Who last set the prompt or agent_config: the creator of the runs the schedule starts (API schedules)',
    }),
    history: Type.Object({ last_ran: NullableDateTime, next_run: NullableDateTime }),
    scope: Type.Object({ type: Type.Literal('Team'), uid: Str }),
    metadata: Metadata,
    factory_uid: Type.Optional(
      Type.String({ description: 'Set when an automation file declares this schedule (read-only here)' }),
    ),
    automation_id: OptStr,
    automation_name: OptStr,
  },
  { description: 'ScheduledAgentItem' },
);

export const ListSchedulesResponseSchema = Type.Object({ schedules: Type.Array(ScheduledAgentItemSchema) });

export const DeleteScheduleResponseSchema = Type.Object({ success: Type.Boolean() });

export const ScheduleIdParamsSchema = Type.Object({ scheduleId: Type.String({ minLength: 1 }) });
