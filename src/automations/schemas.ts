import { Type } from 'typebox';

const Str = Type.String();
const NullableStr = Type.Union([Type.String(), Type.Null()]);
const DateTime = Type.String({ format: 'date-time' });

export const AutomationIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) });

export const TriggerStatusSchema = Type.Object({
  trigger_index: Type.Integer({ description: 'Position of the trigger in the automation file (0-based)' }),
  webhook_uid: Str,
  webhook_name: NullableStr,
  webhook_state: Type.Union([Type.Literal('enabled'), Type.Literal('disabled'), Type.Literal('deleted'), Type.Literal('unknown')]),
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
  config: Type.Record(Type.String(), Type.Unknown(), { description: 'The run configuration the automation starts runs with' }),
  triggers: Type.Array(Type.Record(Type.String(), Type.Unknown()), { description: 'As in the definition file' }),
  webhook_triggers: Type.Array(TriggerStatusSchema),
  firing: Type.Boolean({ description: 'Whether a trigger of this automation can start runs now' }),
  not_firing_reasons: Type.Array(Str),
  created_at: DateTime,
  updated_at: DateTime,
});

export const TestFilterBody = Type.Object({ delivery_id: Type.String({ minLength: 1, maxLength: 64 }) }, { additionalProperties: false });

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
    path: Type.Optional(Type.String({ description: 'JSON pointer into the payload where the filter failed ("" = the payload itself)' })),
    reason: Type.Optional(Str),
  }),
});
