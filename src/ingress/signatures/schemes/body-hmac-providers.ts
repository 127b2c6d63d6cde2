import { bodyHmacScheme } from '../body-hmac.ts';
import { providerIssuedSecret, userChosenSecret } from '../secrets.ts';
import type { SignatureScheme } from '../types.ts';

/** Providers that sign only the raw body, one signature, no timestamp. */

export const github: SignatureScheme = bodyHmacScheme({
  id: 'github',
  displayName: 'GitHub',
  signatureHeader: 'x-hub-signature-256',
  prefix: 'sha256=',
  hash: 'sha256',
  encoding: 'hex',
  deliveryIdHeaders: ['x-github-delivery'],
  otherHeaders: ['x-github-event', 'x-github-hook-id'],
  secret: userChosenSecret(
    'any high-entropy string, used as UTF-8',
    'repository or organization Settings → Webhooks → Secret (paste the generated value)',
  ),
  docsUrl: 'https://docs.github.com/webhooks/using-webhooks/validating-webhook-deliveries',
  notes: [
    'Only X-Hub-Signature-256 is checked; the legacy SHA-1 X-Hub-Signature is ignored.',
    'Set the content type to application/json: form-encoded deliveries are not JSON and are refused after verification.',
    'Redeliveries reuse X-GitHub-Delivery, so they are recorded as duplicates.',
  ],
});

export const shopify: SignatureScheme = bodyHmacScheme({
  id: 'shopify',
  displayName: 'Shopify',
  signatureHeader: 'x-shopify-hmac-sha256',
  prefix: '',
  hash: 'sha256',
  encoding: 'base64',
  deliveryIdHeaders: ['x-shopify-webhook-id'],
  otherHeaders: ['x-shopify-topic', 'x-shopify-shop-domain', 'x-shopify-event-id', 'x-shopify-triggered-at'],
  secret: providerIssuedSecret(
    "the app's client secret (or, for webhooks made in the shop admin, the key shown under Settings → Notifications → Webhooks)",
    'Shopify Dev Dashboard → the app → Settings → Client secret',
  ),
  docsUrl: 'https://shopify.dev/docs/apps/build/webhooks/verify-deliveries',
  notes: [
    'After a client-secret rotation Shopify may keep signing with the old secret for up to an hour.',
    'X-Shopify-Webhook-Id is per delivery attempt chain; X-Shopify-Event-Id is shared by every webhook of one merchant action.',
  ],
});

export const sentry: SignatureScheme = bodyHmacScheme({
  id: 'sentry',
  displayName: 'Sentry (integration platform)',
  signatureHeader: 'sentry-hook-signature',
  prefix: '',
  hash: 'sha256',
  encoding: 'hex',
  deliveryIdHeaders: ['request-id'],
  otherHeaders: ['sentry-hook-resource', 'sentry-hook-timestamp'],
  secret: providerIssuedSecret(
    "the integration's Client Secret",
    'Sentry → Settings → Developer Settings → the integration → Credentials → Client Secret',
  ),
  docsUrl: 'https://docs.sentry.io/integrations/integration-platform/webhooks/',
  notes: ['Sentry-Hook-Timestamp is not covered by the signature, so it is not checked.'],
});

export const vercel: SignatureScheme = bodyHmacScheme({
  id: 'vercel',
  displayName: 'Vercel',
  signatureHeader: 'x-vercel-signature',
  prefix: '',
  hash: 'sha1',
  encoding: 'hex',
  deliveryIdHeaders: [],
  secret: providerIssuedSecret(
    'the webhook secret shown when the webhook is created (integrations: the integration client secret)',
    'Vercel → Team Settings → Webhooks → the secret shown once at creation',
  ),
  docsUrl: 'https://vercel.com/docs/webhooks/webhooks-api#securing-webhooks',
  notes: ['HMAC-SHA1, hex. No timestamp and no delivery-ID header: duplicates are found by body hash.'],
});

export const intercom: SignatureScheme = bodyHmacScheme({
  id: 'intercom',
  displayName: 'Intercom',
  signatureHeader: 'x-hub-signature',
  prefix: 'sha1=',
  hash: 'sha1',
  encoding: 'hex',
  deliveryIdHeaders: [],
  secret: providerIssuedSecret(
    "the app's client secret",
    'Intercom Developer Hub → the app → Basic information → Client secret',
  ),
  docsUrl: 'https://developers.intercom.com/docs/webhooks/webhook-notifications',
  notes: ['No delivery-ID header: the notification id (notif_…) is in the body; duplicates are found by body hash.'],
});

export const bitbucket: SignatureScheme = bodyHmacScheme({
  id: 'bitbucket',
  displayName: 'Bitbucket Cloud',
  signatureHeader: 'x-hub-signature',
  prefix: 'sha256=',
  hash: 'sha256',
  encoding: 'hex',
  deliveryIdHeaders: ['x-request-uuid'],
  otherHeaders: ['x-event-key', 'x-hook-uuid', 'x-attempt-number'],
  secret: userChosenSecret(
    'any high-entropy string, used as UTF-8',
    'Repository settings → Webhooks → the webhook → Secret',
  ),
  docsUrl: 'https://support.atlassian.com/bitbucket-cloud/docs/manage-webhooks/',
  notes: ['SHA-256 under the X-Hub-Signature header name that GitHub uses for SHA-1.'],
});

export const typeform: SignatureScheme = bodyHmacScheme({
  id: 'typeform',
  displayName: 'Typeform',
  signatureHeader: 'typeform-signature',
  prefix: 'sha256=',
  hash: 'sha256',
  encoding: 'base64',
  deliveryIdHeaders: [],
  secret: userChosenSecret('any high-entropy string, used as UTF-8', 'Typeform → Connect → Webhooks → Edit → Secret'),
  docsUrl: 'https://www.typeform.com/developers/webhooks/secure-your-webhooks/',
  notes: ['The signature is base64 after a sha256= prefix.'],
});
