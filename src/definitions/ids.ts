/**
 * Webhook UIDs are assigned by the reconciler the first time a webhook file applies:
 * `wh_` followed by a lower-case ULID (26 characters of Crockford base32, see src/kernel/ids.ts).
 * The check accepts the full lower-case alphanumeric range so that it stays a format check.
 */
const WEBHOOK_UID = /^wh_[0-9a-z]{26}$/;

export function isWebhookUid(value: unknown): value is string {
  return typeof value === 'string' && WEBHOOK_UID.test(value);
}

export const WEBHOOK_UID_FORMAT = 'wh_ followed by 26 lower-case letters or digits';
