import { Type } from 'typebox';

const Str = Type.String();
const DateTime = Type.String({ format: 'date-time' });

export const WebhookUidParams = Type.Object({ uid: Type.String({ minLength: 1, maxLength: 64 }) });
export const FactoryIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) });

const AuthModeSchema = Type.Union([Type.Literal('token'), Type.Literal('url_token'), Type.Literal('signature')]);
const NullableStr = Type.Union([Type.String(), Type.Null()]);

export const CreateWebhookBody = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: 64,
      description: 'The file stem: webhooks/<name>.yaml. Cannot be changed later.',
    }),
    auth_mode: Type.Optional(AuthModeSchema),
    signature_scheme: Type.Optional(
      Type.String({ description: 'Required when auth_mode is signature (standard_webhooks, stripe, github, …)' }),
    ),
    secret: Type.Optional(
      Type.String({
        maxLength: 4096,
        description:
          "signature only: the provider's signing secret. Leave out to have one generated (senders that take ours) or to set it later with rotate-secret.",
      }),
    ),
    secret_name: Type.Optional(
      Type.String({
        description:
          'The managed team secret holding the credential; webhook-<name> by default. An existing secret may be named.',
      }),
    ),
    delivery_id_header: Type.Optional(
      Type.String({ description: 'A header in which the sender puts its own event ID' }),
    ),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

export const PatchWebhookBody = Type.Object(
  {
    name: Type.Optional(Type.String({ description: 'Renaming is refused (webhook_rename_unsupported)' })),
    enabled: Type.Optional(Type.Boolean()),
    delivery_id_header: Type.Optional(NullableStr),
  },
  { additionalProperties: false },
);

export const RotateSecretBody = Type.Object(
  {
    secret: Type.Optional(
      Type.String({ maxLength: 4096, description: "signature only: the provider's new signing secret" }),
    ),
  },
  { additionalProperties: false },
);

export const WebhookSchema = Type.Object({
  uid: Str,
  factory_id: Str,
  name: Str,
  file: Str,
  auth_mode: AuthModeSchema,
  signature_scheme: NullableStr,
  secret_name: NullableStr,
  delivery_id_header: NullableStr,
  enabled: Type.Boolean(),
  state: Type.Union([Type.Literal('enabled'), Type.Literal('disabled'), Type.Literal('deleted')]),
  has_secret: Type.Boolean({
    description:
      'False until a signature webhook created without a secret gets one (deliveries are refused until then)',
  }),
  ingress_url: Type.String({
    description: 'For url_token the last segment is a `{token}` placeholder for the secret.',
  }),
  created_at: DateTime,
  updated_at: DateTime,
  deleted_at: Type.Optional(DateTime),
});

export const WebhookWithSecretSchema = Type.Object({
  ...WebhookSchema.properties,
  secret: Type.Optional(
    Type.String({
      description: 'Shown once, here only; absent when an existing secret was referenced or none is set yet',
    }),
  ),
  ingress_url_with_token: Type.Optional(
    Type.String({ description: 'url_token only, shown once: the URL with the secret as its last segment' }),
  ),
});
