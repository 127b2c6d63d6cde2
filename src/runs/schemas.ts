import { Type } from 'typebox';
import { CLIENT_ERROR_CODES, CLIENT_RUN_SOURCES, RUN_SOURCES, SOURCE_FILTER_VALUES } from '../engine/client-enums.ts';
import type { ClientErrorCode, ClientRunSource, RunSource } from '../engine/client-enums.ts';
import type { AgentConfig } from '../engine/model.ts';
import { RUN_STATES } from '../engine/state-machine.ts';
import type { RunState } from '../engine/state-machine.ts';

const Str = Type.String();
const OptStr = Type.Optional(Type.String());
const DateTime = Type.String({ format: 'date-time' });

export const McpServerConfigSchema = Type.Object({
  warp_id: OptStr,
  command: OptStr,
  args: Type.Optional(Type.Array(Str)),
  url: OptStr,
  env: Type.Optional(Type.Record(Type.String(), Type.String())),
  headers: Type.Optional(Type.Record(Type.String(), Type.String())),
});

export const AgentConfigSchema = Type.Object(
  {
    name: OptStr,
    model_id: OptStr,
    base_prompt: OptStr,
    environment_id: OptStr,
    worker_host: OptStr,
    skill_spec: OptStr,
    mcp_servers: Type.Optional(Type.Record(Type.String(), McpServerConfigSchema)),
    computer_use_enabled: Type.Optional(Type.Boolean()),
    idle_timeout_minutes: Type.Optional(Type.Integer()),
    harness: Type.Optional(
      Type.Object({
        type: OptStr,
        model_id: OptStr,
        reasoning_level: OptStr,
        base_url: Type.Optional(
          Type.String({ description: "The built-in agent's OpenAI-compatible endpoint (`type: agentyard`)" }),
        ),
      }),
    ),
    harness_auth_secrets: Type.Optional(
      Type.Object({
        claude_auth_secret_name: OptStr,
        codex_auth_secret_name: OptStr,
        gemini_auth_secret_name: OptStr,
        agentyard_auth_secret_name: OptStr,
      }),
    ),
    skills: Type.Optional(Type.Array(Str)),
    runner_id: OptStr,
    max_duration_seconds: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 604_800,
        description:
          "Agentyard extension: a wall-clock budget from the run's creation (a follow-up: from its start); past it the run ends FAILED with `budget_exceeded`.",
      }),
    ),
    max_turns: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 10_000,
        description:
          'Agentyard extension: the most model turns the agent takes, where its harness supports it (Claude Code `--max-turns`, the built-in agent).',
      }),
    ),
    max_tokens: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 1_000_000_000_000,
        description:
          'Agentyard extension: the most tokens (input + output, over all its executions) the run may use, as its harness reports them; past it the run ends FAILED with `budget_exceeded`.',
      }),
    ),
    max_cost_usd: Type.Optional(
      Type.Number({
        exclusiveMinimum: 0,
        maximum: 1_000_000,
        description:
          'Agentyard extension: the most cost in USD (over all its executions) the run may spend, as its harness reports it (Claude Code, the `command` harness); past it the run ends FAILED with `budget_exceeded`.',
      }),
    ),
  },
  { description: 'AmbientAgentConfig. Unknown members are accepted and ignored by validation.' },
);

export const AttachmentInputSchema = Type.Object({
  file_name: Str,
  mime_type: Str,
  data: Type.String({ description: 'base64' }),
});

export const RunAgentRequestSchema = Type.Object({
  prompt: OptStr,
  title: OptStr,
  skill: OptStr,
  config: Type.Optional(AgentConfigSchema),
  team: Type.Optional(Type.Boolean()),
  agent_identity_uid: OptStr,
  conversation_id: OptStr,
  parent_run_id: OptStr,
  interactive: Type.Optional(Type.Boolean()),
  attachments: Type.Optional(Type.Array(AttachmentInputSchema, { maxItems: 5 })),
  images: Type.Optional(Type.Array(Type.Object({ data: Str, mime_type: Str }), { maxItems: 5 })),
  metadata: Type.Optional(Type.Record(Type.String(), Type.String())),
  mode: Type.Optional(Type.Union([Type.Literal('normal'), Type.Literal('plan'), Type.Literal('orchestrate')])),
});

export const RunStateSchema = Type.Unsafe<RunState>({ type: 'string', enum: [...RUN_STATES] });
export const RunSourceSchema = Type.Unsafe<ClientRunSource>({ type: 'string', enum: [...CLIENT_RUN_SOURCES] });
const RunSourceDetailSchema = Type.Unsafe<RunSource>({ type: 'string', enum: [...RUN_SOURCES] });
const ErrorCodeSchema = Type.Unsafe<ClientErrorCode>({ type: 'string', enum: Object.keys(CLIENT_ERROR_CODES) });
const SourceFilterSchema = Type.Unsafe<string>({
  type: 'string',
  enum: [...SOURCE_FILTER_VALUES],
  description: 'A client source (API selects API, webhook and factory runs) or a stored one (WEBHOOK, FACTORY)',
});

export const RunAgentResponseSchema = Type.Object({
  run_id: Str,
  task_id: Str,
  state: RunStateSchema,
  at_capacity: Type.Optional(Type.Boolean()),
  warnings: Type.Optional(
    Type.Array(Type.Object({ code: Type.Literal('model_unknown'), field: Str, message: Str }), {
      description: 'What the server accepted but would not have chosen: a model outside its catalogue',
    }),
  ),
});

export const RunItemSchema = Type.Object(
  {
    run_id: Str,
    task_id: Str,
    title: Str,
    state: RunStateSchema,
    prompt: Str,
    created_at: DateTime,
    updated_at: DateTime,
    started_at: Type.Union([DateTime, Type.Null()]),
    execution_location: Type.Union([Type.Literal('LOCAL'), Type.Literal('REMOTE')]),
    status_message: Type.Optional(
      Type.Object({
        message: Str,
        error_code: Type.Optional(ErrorCodeSchema),
        error_detail: OptStr,
        retryable: Type.Optional(Type.Boolean()),
      }),
    ),
    source: RunSourceSchema,
    source_detail: Type.Optional(RunSourceDetailSchema),
    session_id: Str,
    session_link: Type.String({ format: 'uri' }),
    creator: Type.Optional(
      Type.Object({
        type: Type.Union([Type.Literal('user'), Type.Literal('service_account')]),
        uid: Str,
        display_name: Str,
        email: OptStr,
      }),
    ),
    agent_config: Type.Unsafe<AgentConfig>({ type: 'object', additionalProperties: true }),
    conversation_id: Str,
    parent_run_id: OptStr,
    artifacts: Type.Array(Type.Unknown()),
    scope: Type.Object({ type: Type.Literal('Team'), uid: Str }),
    is_run_type_cancellable: Type.Boolean(),
    metadata: Type.Record(Type.String(), Type.String()),
    request_usage: Type.Optional(Type.Record(Type.String(), Type.Number())),
    run_time: OptStr,
    schedule: Type.Optional(Type.Object({ schedule_id: Str, schedule_name: Str, cron_schedule: Str })),
    agent_skill: Type.Optional(Type.Object({ name: OptStr, full_path: OptStr })),
    factory_uid: OptStr,
    automation_id: OptStr,
    delivery_id: OptStr,
    worker_host: OptStr,
    concurrency: Type.Optional(
      Type.Object(
        { key: Str, limit: Type.Integer({ minimum: 1 }), superseded_by: OptStr },
        {
          description:
            "Agentyard extension: the concurrency key the run's automation rendered when it fired, its limit, and the newer run of the key that cancelled it (onNew: cancelRunning)",
        },
      ),
    ),
    result: Type.Optional(
      Type.Union([Str, Type.Null()], {
        description: "The agent's final answer: the text of the run's last `result` event (GET of one run only)",
      }),
    ),
  },
  { additionalProperties: true },
);

export const PageInfoSchema = Type.Object({ has_next_page: Type.Boolean(), next_cursor: OptStr });

export const ListRunsResponseSchema = Type.Object({ runs: Type.Array(RunItemSchema), page_info: PageInfoSchema });

export const ListRunsQuerySchema = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 20 })),
    cursor: OptStr,
    sort_by: Type.Optional(
      Type.Union([
        Type.Literal('updated_at'),
        Type.Literal('created_at'),
        Type.Literal('title'),
        Type.Literal('agent'),
      ]),
    ),
    sort_order: Type.Optional(Type.Union([Type.Literal('asc'), Type.Literal('desc')])),
    state: Type.Optional(Type.Array(RunStateSchema)),
    name: OptStr,
    config_name: OptStr,
    model_id: OptStr,
    creator: OptStr,
    source: Type.Optional(SourceFilterSchema),
    execution_location: Type.Optional(Type.Union([Type.Literal('LOCAL'), Type.Literal('REMOTE')])),
    created_after: OptStr,
    created_before: OptStr,
    updated_after: OptStr,
    environment_id: OptStr,
    skill: OptStr,
    skill_spec: OptStr,
    schedule_id: OptStr,
    ancestor_run_id: OptStr,
    artifact_type: OptStr,
    q: OptStr,
    automation_id: OptStr,
    executor: OptStr,
    factory_uid: OptStr,
    factory_id: OptStr,
    worker_host: OptStr,
  },
  { additionalProperties: true },
);

export const RunFollowupRequestSchema = Type.Object({
  message: OptStr,
  mode: Type.Optional(Type.Union([Type.Literal('normal'), Type.Literal('plan'), Type.Literal('orchestrate')])),
});

export const RunIdParamsSchema = Type.Object({ runId: Type.String({ minLength: 1 }) });

export const FollowupSchema = Type.Object({
  followup_id: Str,
  message: Str,
  mode: Str,
  creator_uid: OptStr,
  created_at: DateTime,
  consumed_at: Type.Union([DateTime, Type.Null()]),
});

export const RunTreeResponseSchema = Type.Object({
  root_run_id: Type.String(),
  runs: Type.Array(Type.Intersect([RunItemSchema, Type.Object({ depth: Type.Integer({ minimum: 0 }) })])),
  truncated: Type.Boolean({ description: 'More runs are below the root than the answer holds' }),
  messages: Type.Array(
    Type.Object({
      run_id: Type.String({ description: 'The run that sent it' }),
      sequence: Type.Integer(),
      type: Type.Union([Type.Literal('report'), Type.Literal('question'), Type.Literal('reply')]),
      text: Type.String(),
      to_run_id: Type.Optional(Type.String({ description: 'A report: the parent it went to' })),
      occurred_at: Type.String({ format: 'date-time' }),
    }),
  ),
});
