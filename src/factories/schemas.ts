import { Type } from 'typebox';

const Str = Type.String();
const OptStr = Type.Optional(Type.String());
const NullableStr = Type.Union([Type.String(), Type.Null()]);
const DateTime = Type.String({ format: 'date-time' });
const NullableDateTime = Type.Union([DateTime, Type.Null()]);

/** Factory names: what `agentyard plan/apply --factory NAME` use. */
export const FACTORY_NAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$';

export const DiagnosticSchema = Type.Object({
  file: Str,
  line: Type.Integer(),
  column: Type.Integer(),
  path: Str,
  code: Str,
  message: Str,
  severity: Type.Union([Type.Literal('error'), Type.Literal('warning')]),
});

export const WarningSchema = Type.Object({ code: Str, file: Str, line: Type.Integer(), path: Str, message: Str });

export const ChangeSchema = Type.Object({
  kind: Str,
  name: Str,
  file: Str,
  action: Type.Union([Type.Literal('created'), Type.Literal('updated'), Type.Literal('deleted')]),
  uid: Type.Optional(NullableStr),
  id: Type.Optional(NullableStr),
  fields: Type.Optional(Type.Array(Str)),
  detail: OptStr,
});

export const SourceInputSchema = Type.Object(
  {
    type: Type.Optional(Type.Union([Type.Literal('git'), Type.Literal('directory'), Type.Literal('managed')])),
    url: Type.Optional(Type.String({ minLength: 1, maxLength: 2048 })),
    branch: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    path: Type.Optional(Type.String({ maxLength: 4096 })),
    poll_interval_seconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 86400 })),
    credentials_secret: Type.Optional(Type.String({ maxLength: 128 })),
    push_secret: Type.Optional(Type.String({ maxLength: 128 })),
    github_repository: Type.Optional(
      Type.String({
        maxLength: 140,
        description:
          'The GitHub repository (owner/name) this git source is, when its URL does not say: its pull requests get the factory check.',
      }),
    ),
  },
  { additionalProperties: false },
);

export const SourceSchema = Type.Object({
  type: Str,
  url: OptStr,
  branch: OptStr,
  path: Type.Optional(NullableStr),
  poll_interval_seconds: Type.Optional(Type.Integer()),
  credentials_secret: Type.Optional(NullableStr),
  push_secret: Type.Optional(NullableStr),
  github_repository: Type.Optional(NullableStr),
});

export const StatusSchema = Type.Object({
  state: Type.Union([Type.Literal('pending'), Type.Literal('applied'), Type.Literal('failed')]),
  ready: Type.Boolean({ description: 'The newest revision is applied and the last fetch worked.' }),
  stalled: Type.Boolean({ description: 'Needs a person: a refused revision or a source failure no retry fixes.' }),
  reason: NullableStr,
  message: NullableStr,
  applied_revision: NullableStr,
  attempted_revision: NullableStr,
  applied_at: NullableDateTime,
  attempted_at: NullableDateTime,
  errors: Type.Array(DiagnosticSchema, {
    description: 'Diagnostics of the last attempted revision (warnings included).',
  }),
  source_error: Type.Union([
    Type.Object({
      reason: Str,
      kind: Type.Union([Type.Literal('transient'), Type.Literal('terminal')]),
      message: Str,
      at: DateTime,
    }),
    Type.Null(),
  ]),
  fetched_at: NullableDateTime,
});

export const FactorySchema = Type.Object({
  id: Str,
  name: Str,
  team_id: Str,
  source: SourceSchema,
  read_only: Type.Boolean({
    description: 'Repository- and directory-backed factories are changed through their files.',
  }),
  status: StatusSchema,
  push_hook_url: Type.Optional(
    Type.String({ description: 'Where a Git host posts push events (when source.push_secret is set).' }),
  ),
  counts: Type.Optional(
    Type.Object(
      { webhooks: Type.Integer(), automations: Type.Integer(), schedules: Type.Integer() },
      { description: 'Live webhooks, automations and schedules of the applied revision' },
    ),
  ),
  created_at: DateTime,
  updated_at: DateTime,
});

export const PageInfoSchema = Type.Object({ has_next_page: Type.Boolean(), next_cursor: OptStr });

export const FactoryIdParams = Type.Object({ id: Str });

export const ApplySchema = Type.Object({
  id: Str,
  revision: Str,
  result: Type.Union([Type.Literal('applied'), Type.Literal('unchanged'), Type.Literal('failed')]),
  reason: NullableStr,
  message: NullableStr,
  trigger: NullableStr,
  commit: Type.Object({ sha: NullableStr, author: NullableStr, message: NullableStr, time: NullableDateTime }),
  errors: Type.Array(DiagnosticSchema),
  warnings: Type.Array(WarningSchema),
  changes: Type.Array(ChangeSchema),
  started_at: DateTime,
  finished_at: DateTime,
});

export const OutcomeSchema = Type.Object({
  result: Type.Union([
    Type.Literal('applied'),
    Type.Literal('unchanged'),
    Type.Literal('failed'),
    Type.Literal('skipped'),
    Type.Literal('none'),
    Type.Literal('queued'),
  ]),
  revision: NullableStr,
  reason: NullableStr,
  message: NullableStr,
  apply_id: NullableStr,
  errors: Type.Array(DiagnosticSchema),
  warnings: Type.Array(WarningSchema),
  changes: Type.Array(ChangeSchema),
  status: Type.Optional(StatusSchema),
});

export const WebhookSchema = Type.Object({
  uid: Str,
  name: Str,
  file: Str,
  auth_mode: Type.Union([Type.Literal('token'), Type.Literal('url_token'), Type.Literal('signature')]),
  signature_scheme: NullableStr,
  secret_name: NullableStr,
  delivery_id_header: NullableStr,
  enabled: Type.Boolean(),
  ingress_url: Type.String({
    description: 'For url_token the last segment is a `{token}` placeholder for the secret.',
  }),
  created_at: DateTime,
  updated_at: DateTime,
});

export const FileSchema = Type.Object(
  { path: Type.String({ minLength: 1, maxLength: 1024 }), content: Type.String() },
  { additionalProperties: false },
);
export const FilesBodySchema = Type.Object(
  { files: Type.Array(FileSchema, { maxItems: 5000 }), message: Type.Optional(Type.String({ maxLength: 10_000 })) },
  { additionalProperties: false },
);

export const PlanResultSchema = Type.Object({
  valid: Type.Boolean(),
  schema_version: Str,
  diagnostics: Type.Array(DiagnosticSchema),
  changes: Type.Array(ChangeSchema),
  warnings: Type.Array(WarningSchema),
  applied_revision: NullableStr,
  state_dependent_checks_not_run: Type.Array(Type.Record(Type.String(), Type.Unknown())),
  deferred_resolutions: Type.Array(Type.Record(Type.String(), Type.Unknown())),
});

export const CreateFactoryRunBody = Type.Object({
  prompt: Type.String({ minLength: 1 }),
  title: OptStr,
  config: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
});

export const RunCreatedSchema = Type.Object({ run_id: Str, task_id: Str, state: Str, factory_id: Str });

export const ReferenceFactorySchema = Type.Object({}, { additionalProperties: true });
