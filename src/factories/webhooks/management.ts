/**
 * Webhooks of managed factories through the API. Every write is a change of the factory's definition files
 * (`webhooks/<name>.yaml`), committed and applied in one step; the secret value lives in the team's managed
 * secret (never in a file) and, once applied, in the webhook row. Rotation writes both at once.
 */
import { announceLiveChange } from '../live-state.ts';
import type { Caller } from '../../identity/principal.ts';
import { parseDocument, stringify } from 'yaml';
import { MAX_WEBHOOKS_PER_FACTORY } from '../../definitions/index.ts';
import { RESOURCE_NAME } from '../../definitions/load.ts';
import type { ManagedFactoryContext } from '../managed-change.ts';
import type { Queryable } from '../../kernel/db.ts';
import { AppError } from '../../kernel/errors.ts';
import { generateSecretFor, getSignatureScheme, SIGNATURE_SCHEME_IDS } from '../../ingress/signatures/index.ts';
import type { FactoryRow, WebhookRow } from '../apply/model.ts';
import * as factorySql from '../apply/sql.ts';
import { isUrlSafe } from '../../secrets/provider.ts';
import type { SecretService } from '../../secrets/service.ts';
import { checkSecretName } from '../../secrets/service.ts';
import { randomToken } from '../../kernel/ids.ts';
import { changeManagedFactory, fileAt, replaceFile, requireManaged, teamFactory } from '../managed-change.ts';

export type AuthMode = 'token' | 'url_token' | 'signature';

export interface CreateWebhookInput {
  name: string;
  auth_mode?: AuthMode | undefined;
  signature_scheme?: string | undefined;
  secret?: string | undefined;
  secret_name?: string | undefined;
  delivery_id_header?: string | undefined;
  enabled?: boolean | undefined;
}

export interface PatchWebhookInput {
  name?: string | undefined;
  enabled?: boolean | undefined;
  delivery_id_header?: string | null | undefined;
}

/** What a create or rotation shows once: the secret (unless an existing one was referenced) and the real URL. */
export interface SecretShownOnce {
  secret?: string;
  /** For url_token: the URL with the token in it (elsewhere only a `{token}` placeholder is shown). */
  ingress_url_with_token?: string;
}

const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$/;

function webhookFile(input: {
  authMode: AuthMode;
  signatureScheme: string | null;
  secretName: string;
  deliveryIdHeader: string | null;
  enabled: boolean;
}): string {
  return stringify({
    authMode: input.authMode,
    ...(input.signatureScheme ? { signatureScheme: input.signatureScheme } : {}),
    secretName: input.secretName,
    ...(input.deliveryIdHeader ? { deliveryIdHeader: input.deliveryIdHeader } : {}),
    enabled: input.enabled,
  });
}

function webhookFiles(files: readonly { path: string }[]): string[] {
  return files.map((f) => f.path).filter((p) => /^webhooks\/[^/]+\.ya?ml$/.test(p));
}

function secretProblem(authMode: AuthMode, scheme: string | null, secret: string): string | undefined {
  if (secret.length === 0) return undefined;
  if (authMode === 'url_token' && !isUrlSafe(secret)) return 'a url_token secret may hold only A-Z a-z 0-9 - . _ ~';
  if (authMode === 'signature' && scheme) return getSignatureScheme(scheme)?.secret.check(secret);
  return undefined;
}

/** The webhook if it is (or was: history outlives a deleted webhook) the caller's team's; else 404. */
export async function teamWebhook(q: Queryable, teamId: string, uid: string): Promise<WebhookRow> {
  const res = await q.query<WebhookRow>('SELECT * FROM webhooks WHERE uid = $1 AND team_id = $2', [uid, teamId]);
  const row = res.rows[0];
  if (!row) throw new AppError('resource_not_found', `webhook ${uid} does not exist`);
  return row;
}

export class WebhookManagement {
  readonly #ctx: ManagedFactoryContext;

  readonly #secrets: SecretService;

  /** `secrets`: where a webhook's secret is stored (the secrets domain owns the table). */
  constructor(ctx: ManagedFactoryContext, secrets: SecretService) {
    this.#ctx = ctx;
    this.#secrets = secrets;
  }

  async #live(teamId: string, uid: string): Promise<{ row: WebhookRow; factory: FactoryRow }> {
    const row = await teamWebhook(this.#ctx.db, teamId, uid);
    if (row.deleted_at) throw new AppError('resource_not_found', `webhook ${uid} was deleted`);
    return { row, factory: await teamFactory(this.#ctx, teamId, row.factory_id) };
  }

  async create(
    request: Caller,
    factoryId: string,
    input: CreateWebhookInput,
  ): Promise<{ row: WebhookRow; shown: SecretShownOnce }> {
    const { teamId } = request.principal;
    const factory = await teamFactory(this.#ctx, teamId, factoryId);
    requireManaged(this.#ctx, factory);
    const name = input.name;
    if (!RESOURCE_NAME.test(name))
      throw new AppError(
        'invalid_request',
        `name "${name}" must be 1-64 letters, digits, ".", "_" or "-", starting with a letter or digit`,
      );
    const authMode = input.auth_mode ?? 'token';
    const scheme = authMode === 'signature' ? (input.signature_scheme ?? null) : null;
    if (authMode === 'signature' && !scheme)
      throw new AppError('invalid_request', 'signature_scheme is required when auth_mode is signature');
    if (authMode !== 'signature' && input.signature_scheme)
      throw new AppError('invalid_request', 'signature_scheme applies only to auth_mode signature');
    if (scheme && !getSignatureScheme(scheme))
      throw new AppError(
        'invalid_request',
        `signature_scheme "${scheme}" is not one of ${SIGNATURE_SCHEME_IDS.join(', ')}`,
      );
    if (authMode !== 'signature' && input.secret !== undefined) {
      throw new AppError(
        'invalid_request',
        `secret: the service generates the secret of a ${authMode} webhook; leave it out (or name an existing secret with secret_name)`,
      );
    }
    if (input.delivery_id_header !== undefined && !HEADER_NAME.test(input.delivery_id_header)) {
      throw new AppError('invalid_request', `delivery_id_header "${input.delivery_id_header}" is not a header name`);
    }
    const secretName = input.secret_name ?? `webhook-${name}`;
    checkSecretName(secretName);
    if (input.secret !== undefined) {
      const problem = secretProblem(authMode, scheme, input.secret);
      if (problem) throw new AppError('invalid_request', `secret: ${problem}`);
    }

    let shown: SecretShownOnce = {};
    let createdSecret = false;
    try {
      await changeManagedFactory(this.#ctx, factory, request, `Create webhook ${name}`, async (files) => {
        const path = `webhooks/${name}.yaml`;
        const existing = webhookFiles(files);
        if (existing.some((p) => p === path || p === `webhooks/${name}.yml`)) {
          throw new AppError('webhook_name_taken', `factory ${factory.name} already has a webhook named "${name}"`);
        }
        if (existing.length >= MAX_WEBHOOKS_PER_FACTORY) {
          throw new AppError(
            'webhook_limit_reached',
            `factory ${factory.name} already has ${existing.length} webhooks; at most ${MAX_WEBHOOKS_PER_FACTORY} are allowed`,
          );
        }
        // A change that lost the head to another process's commit runs again: the secret it made is its own.
        const current = createdSecret ? undefined : await this.#secrets.find(teamId, secretName);
        if (current && input.secret !== undefined) {
          throw new AppError(
            'invalid_request',
            `secret_name: the team already has a secret named "${secretName}"; leave out secret to use its value, or name another secret`,
          );
        }
        if (!current && !createdSecret) {
          // token and url_token: ours; signature: the provider's, or one we generate for senders that take ours,
          // or none yet (an empty placeholder: every delivery is refused until rotate-secret sets it).
          const value =
            authMode === 'signature'
              ? (input.secret ?? (scheme ? generateSecretFor(scheme) : undefined) ?? '')
              : randomToken(32);
          await this.#secrets.putSealed(teamId, secretName, this.#ctx.cipher.encrypt(value));
          createdSecret = true;
          shown = value === '' ? {} : { secret: value };
        }
        return replaceFile(
          files,
          path,
          webhookFile({
            authMode,
            signatureScheme: scheme,
            secretName,
            deliveryIdHeader: input.delivery_id_header ?? null,
            enabled: input.enabled ?? true,
          }),
        );
      });
    } catch (err) {
      if (createdSecret) await this.#secrets.delete(teamId, secretName).catch(() => {});
      throw err;
    }
    const row = (await factorySql.listFactoryWebhooks(this.#ctx.db, factory.id, { includeDeleted: false })).find(
      (w) => w.name === name,
    );
    if (!row) throw new AppError('internal_error', `webhook ${name} was applied but is not live`);
    if (shown.secret !== undefined && row.auth_mode === 'url_token')
      shown.ingress_url_with_token = `${this.#ctx.config.webhookBaseUrl}/webhooks/w/${row.uid}/${shown.secret}`;
    return { row, shown };
  }

  async patch(request: Caller, uid: string, input: PatchWebhookInput): Promise<WebhookRow> {
    const { row, factory } = await this.#live(request.principal.teamId, uid);
    if (input.name !== undefined && input.name !== row.name) {
      throw new AppError(
        'webhook_rename_unsupported',
        `webhook ${row.name} cannot be renamed (its UID belongs to its name); create a new webhook and delete this one`,
      );
    }
    if (input.delivery_id_header && !HEADER_NAME.test(input.delivery_id_header)) {
      throw new AppError('invalid_request', `delivery_id_header "${input.delivery_id_header}" is not a header name`);
    }
    const what = input.enabled === undefined ? 'Update' : input.enabled ? 'Enable' : 'Disable';
    await changeManagedFactory(this.#ctx, factory, request, `${what} webhook ${row.name}`, (files) => {
      const file = fileAt(files, row.file);
      if (!file) throw new AppError('resource_not_found', `webhook ${uid} has no file ${row.file} any more`);
      const doc = parseDocument(file.content);
      if (input.enabled !== undefined) doc.set('enabled', input.enabled);
      if (input.delivery_id_header === null) doc.delete('deliveryIdHeader');
      else if (input.delivery_id_header !== undefined) doc.set('deliveryIdHeader', input.delivery_id_header);
      return replaceFile(files, row.file, String(doc));
    });
    return teamWebhook(this.#ctx.db, request.principal.teamId, uid);
  }

  async delete(request: Caller, uid: string): Promise<void> {
    const { row, factory } = await this.#live(request.principal.teamId, uid);
    await changeManagedFactory(this.#ctx, factory, request, `Delete webhook ${row.name}`, (files) => {
      if (!fileAt(files, row.file))
        throw new AppError('resource_not_found', `webhook ${uid} has no file ${row.file} any more`);
      return files.filter((f) => f.path !== row.file);
    });
  }

  /**
   * A new secret, in force at once: the managed secret and the webhook's secret in force change in one
   * transaction (under the factory's apply lock), and the old value stops working immediately.
   */
  async rotate(
    request: Caller,
    uid: string,
    input: { secret?: string | undefined },
  ): Promise<{ row: WebhookRow; shown: SecretShownOnce }> {
    const { teamId } = request.principal;
    const { row, factory } = await this.#live(teamId, uid);
    requireManaged(this.#ctx, factory);
    if (!row.secret_name) throw new AppError('invalid_request', `webhook ${row.name} names no managed secret`);
    let value: string;
    if (row.auth_mode !== 'signature') {
      if (input.secret !== undefined)
        throw new AppError(
          'invalid_request',
          `secret: the service generates the secret of a ${row.auth_mode} webhook; leave it out`,
        );
      value = randomToken(32);
    } else {
      const generated = input.secret ?? (row.signature_scheme ? generateSecretFor(row.signature_scheme) : undefined);
      if (generated === undefined || generated === '') {
        throw new AppError(
          'invalid_request',
          `secret: ${row.signature_scheme} issues its own signing secret; pass the provider's new secret as secret`,
        );
      }
      const problem = secretProblem('signature', row.signature_scheme, generated);
      if (problem) throw new AppError('invalid_request', `secret: ${problem}`);
      value = generated;
    }
    const sealed = this.#ctx.cipher.encrypt(value);
    await this.#ctx.db.transaction(async (tx) => {
      await factorySql.lockFactory(tx, factory.id);
      await this.#secrets.putSealed(teamId, row.secret_name!, sealed, { within: tx });
      await tx.query(
        'UPDATE webhooks SET secret_ciphertext = $2, secret_version = secret_version + 1, updated_at = ay_now() WHERE uid = $1 AND deleted_at IS NULL',
        [uid, sealed],
      );
    });
    await announceLiveChange(this.#ctx, factory.id);
    const fresh = await teamWebhook(this.#ctx.db, teamId, uid);
    return {
      row: fresh,
      shown: {
        secret: value,
        ...(row.auth_mode === 'url_token'
          ? { ingress_url_with_token: `${this.#ctx.config.webhookBaseUrl}/webhooks/w/${uid}/${value}` }
          : {}),
      },
    };
  }
}
