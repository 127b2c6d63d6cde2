/** Where senders post a webhook's deliveries: `{webhook_base_url}/webhooks/w/{uid}[/{token}]`. */
export const INGRESS_PATH_PREFIX = '/webhooks/w/';

/** A webhook's ingress URL; a url_token webhook's ends in a `{token}` placeholder for the secret. */
export function ingressUrl(webhookBaseUrl: string, webhook: { uid: string; auth_mode: string }): string {
  const base = `${webhookBaseUrl}${INGRESS_PATH_PREFIX}${webhook.uid}`;
  return webhook.auth_mode === 'url_token' ? `${base}/{token}` : base;
}
