import { bitbucket, github, intercom, sentry, shopify, typeform, vercel } from './schemes/body-hmac-providers.ts';
import { calendly } from './schemes/calendly.ts';
import { discord } from './schemes/discord.ts';
import { gitlab } from './schemes/gitlab.ts';
import { linear } from './schemes/linear.ts';
import { paddle } from './schemes/paddle.ts';
import { pagerduty } from './schemes/pagerduty.ts';
import { slack } from './schemes/slack.ts';
import { square } from './schemes/square.ts';
import { standardWebhooks } from './schemes/standard-webhooks.ts';
import { stripe } from './schemes/stripe.ts';
import { twilio } from './schemes/twilio.ts';
import { twitch } from './schemes/twitch.ts';
import { zendesk } from './schemes/zendesk.ts';
import type { SignatureScheme } from './types.ts';

const ALL = [
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
] as const satisfies readonly SignatureScheme[];

export type SignatureSchemeId = (typeof ALL)[number]['id'];

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
