import { Type } from 'typebox';

const Str = Type.String();
const NullableStr = Type.Union([Type.String(), Type.Null()]);
const DateTime = Type.String({ format: 'date-time' });

export const AutomationIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) });

export const TriggerStatusSchema = Type.Object({
  trigger_index: Type.Integer({ description: 'Position of the trigger in the automation file (0-based)' }),
  webhook_uid: Str,
  webhook_name: NullableStr,
  webhook_state: Type.Union([
    Type.Literal('enabled'),
    Type.Literal('disabled'),
    Type.Literal('deleted'),
    Type.Literal('unknown'),
  ]),
  payload_filter: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
});

export const AutomationSchema = Type.Object({
  id: Str,
  factory_id: Str,
  name: Str,
  file: Str,
  enabled: Type.Boolean(),
  agent: NullableStr,
  prompt: Type.String({ description: "The automation's body: the prompt each run starts with" }),
  config: Type.Record(Type.String(), Type.Unknown(), {
    description: 'The run configuration the automation starts runs with',
  }),
  triggers: Type.Array(Type.Record(Type.String(), Type.Unknown()), { description: 'As in the definition file' }),
  webhook_triggers: Type.Array(TriggerStatusSchema),
  firing: Type.Boolean({ description: 'Whether a trigger of this automation can start runs now' }),
  not_firing_reasons: Type.Array(Str),
  created_at: DateTime,
  updated_at: DateTime,
});

export const TestFilterBody = Type.Object(
  { delivery_id: Type.String({ minLength: 1, maxLength: 64 }) },
  { additionalProperties: false },
);

export const TestFilterResultSchema = Type.Object({
  result: Type.Union([Type.Literal('Would trigger'), Type.Literal('Would not trigger')]),
  automation_id: Str,
  delivery_id: Str,
  webhook_uid: Str,
  webhook_check: Type.Object({ passed: Type.Boolean(), detail: Str }),
  payload_check: Type.Object({
    passed: Type.Boolean(),
    detail: Str,
    trigger_index: Type.Optional(Type.Integer()),
    path: Type.Optional(
      Type.String({ description: 'JSON pointer into the payload where the filter failed ("" = the payload itself)' }),
    ),
    reason: Type.Optional(Str),
  }),
});

const ProviderCheck = Type.Object({
  passed: Type.Boolean(),
  detail: Str,
  trigger_index: Type.Optional(Type.Integer({ description: 'The trigger (0-based) the check is about' })),
  path: Type.Optional(Type.String({ description: 'The filter key that did not match: `filter.<key>`' })),
});

export const ProviderTestSchema = Type.Object({
  delivery_id: Str,
  provider: Str,
  events: Type.Array(Str, { description: 'The trigger events the delivery means (e.g. `issue_labeled`)' }),
  automations: Type.Array(
    Type.Object({
      automation_id: Str,
      automation_name: Str,
      factory_id: Str,
      factory_name: Str,
      result: Type.Union([Type.Literal('Would trigger'), Type.Literal('Would not trigger')]),
      event_check: ProviderCheck,
      filter_check: ProviderCheck,
      policy: Type.Optional(
        Type.String({ description: "Why the factory's trigger policy starts no run for who caused the event" }),
      ),
    }),
    { description: "Every live automation of the team with a trigger of this provider, the delivery's first" },
  ),
});

export const FactoryIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) });

const TriggerInput = Type.Record(Type.String(), Type.Unknown(), {
  description:
    'A trigger as in the file: {provider: webhook, event: received, filter: {webhook_ids: [<uid>], payload?}} (or a schedule trigger)',
});

const SettingsSchema = Type.Object(
  {
    model: Type.Optional(Type.Unknown()),
    harness: Type.Optional(Type.Unknown()),
    runner: Type.Optional(Type.Unknown()),
    environmentId: Type.Optional(Type.Unknown()),
    secrets: Type.Optional(Type.Unknown()),
    mcpServers: Type.Optional(Type.Unknown()),
    workerHost: Type.Optional(Type.Unknown()),
  },
  {
    additionalProperties: false,
    description:
      "Execution keys written into the file's frontmatter as given (they override the agent's and agentDefaults); null removes one (PATCH)",
  },
);

export const CreateAutomationBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 64, description: 'The directory: automations/<name>/automation.md' }),
    prompt: Type.String({
      minLength: 1,
      maxLength: 262_144,
      description: 'The body of the file: what every run starts with',
    }),
    enabled: Type.Optional(Type.Boolean()),
    agent: Type.Optional(Type.String({ description: 'A declared agent; the foreman when left out' })),
    triggers: Type.Array(TriggerInput, { minItems: 1, maxItems: 50 }),
    settings: Type.Optional(SettingsSchema),
  },
  { additionalProperties: false },
);

export const PatchAutomationBody = Type.Object(
  {
    name: Type.Optional(Type.String({ description: 'Renaming is refused' })),
    prompt: Type.Optional(Type.String({ minLength: 1, maxLength: 262_144 })),
    enabled: Type.Optional(Type.Boolean()),
    agent: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    triggers: Type.Optional(Type.Array(TriggerInput, { minItems: 1, maxItems: 50 })),
    settings: Type.Optional(SettingsSchema),
  },
  { additionalProperties: false },
);
