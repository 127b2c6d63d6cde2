import type { WebhookRow } from '../factories/apply/model.ts';

/** `{webhook_base_url}/webhooks/w/<uid>`; a url_token webhook's URL ends in a `{token}` placeholder for the secret. */
export function ingressUrl(webhookBaseUrl: string, row: Pick<WebhookRow, 'uid' | 'auth_mode'>): string {
  const base = `${webhookBaseUrl}/webhooks/w/${row.uid}`;
  return row.auth_mode === 'url_token' ? `${base}/{token}` : base;
}

export function webhookView(row: WebhookRow, webhookBaseUrl: string) {
  return {
    uid: row.uid,
    name: row.name,
    file: row.file,
    auth_mode: row.auth_mode,
    signature_scheme: row.signature_scheme,
    secret_name: row.secret_name,
    delivery_id_header: row.delivery_id_header,
    enabled: row.enabled,
    ingress_url: ingressUrl(webhookBaseUrl, row),
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}
