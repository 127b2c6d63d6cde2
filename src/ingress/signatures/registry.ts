import { discord } from './schemes/discord.ts';
import { gitlab } from './schemes/gitlab.ts';
import { HMAC_SCHEMES } from './schemes/hmac-schemes.ts';
import { standardWebhooks } from './schemes/standard-webhooks.ts';
import { twilio } from './schemes/twilio.ts';
import type { SignatureScheme } from './types.ts';

const { stripe, github, slack, shopify, linear, sentry, pagerduty, vercel, intercom, zendesk } = HMAC_SCHEMES;
const { square, paddle, bitbucket, twitch, calendly, typeform } = HMAC_SCHEMES;

const ALL: readonly SignatureScheme[] = [
  standardWebhooks,
  stripe,
  github,
  gitlab,
  slack,
  shopify,
  linear,
  sentry,
  pagerduty,
  vercel,
  twilio,
  intercom,
  discord,
  zendesk,
  square,
  paddle,
  bitbucket,
  twitch,
  calendly,
  typeform,
];

/** Every supported `signatureScheme` value, in the order the docs list them (Standard Webhooks first). */
export const SIGNATURE_SCHEME_IDS: readonly string[] = Object.freeze(ALL.map((scheme) => scheme.id));

export const SIGNATURE_SCHEMES: Readonly<Record<string, SignatureScheme>> = Object.freeze(
  Object.fromEntries(ALL.map((scheme) => [scheme.id, scheme])),
);

export function getSignatureScheme(id: string): SignatureScheme | undefined {
  return Object.hasOwn(SIGNATURE_SCHEMES, id) ? SIGNATURE_SCHEMES[id] : undefined;
}

/**
 * A fresh secret for a scheme whose sender accepts one from us (Standard Webhooks: `whsec_…`; GitHub,
 * GitLab, Bitbucket, Twitch, Calendly, Typeform: a random string to paste into the sender). Undefined when
 * the provider issues the secret itself, or the id is unknown.
 */
export function generateSecretFor(id: string): string | undefined {
  return getSignatureScheme(id)?.secret.generate?.();
}
