import { ingressUrl } from '../../ingress/url.ts';
import type { WebhookRow } from '../apply/model.ts';

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
