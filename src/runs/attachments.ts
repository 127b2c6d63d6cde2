import { Type } from 'typebox';
import type { AppInstance } from '../plugin.ts';
import type { ServiceContext } from '../context.ts';
import { AppError } from '../kernel/errors.ts';
import { openGrant, sealGrant } from '../kernel/sealed-grant.ts';
import type { Cipher } from '../kernel/caller.ts';
import * as sql from './sql.ts';
import { RunIdParamsSchema } from './schemas.ts';
import type { RunService } from './service.ts';

/** How long a `download_url` works. */
export const DOWNLOAD_URL_TTL_MS = 60 * 60 * 1000;

interface DownloadGrant {
  /** team, run, file name */
  t: string;
  r: string;
  f: string;
}

/** A download URL carries its own authorisation (kernel/sealed-grant.ts): clients fetch it without the API key. */
export function sealDownloadToken(
  cipher: Cipher,
  grant: { teamId: string; runId: string; fileName: string; expiresAt: number },
): string {
  return sealGrant(cipher, 'attachment', { t: grant.teamId, r: grant.runId, f: grant.fileName, e: grant.expiresAt });
}

const DOWNLOAD_LINK = {
  invalid: 'no such attachment (the download link is invalid)',
  expired: 'the download link has expired; list the attachments again for a new one',
};

export function openDownloadToken(cipher: Cipher, token: string, now = Date.now()): DownloadGrant {
  const { t, r, f } = openGrant(cipher, 'attachment', token, DOWNLOAD_LINK, now);
  if (typeof t !== 'string' || typeof r !== 'string' || typeof f !== 'string')
    throw new AppError('resource_not_found', DOWNLOAD_LINK.invalid);
  return { t, r, f };
}

const AttachmentSchema = Type.Object({
  attachment_id: Type.String(),
  filename: Type.String(),
  mime_type: Type.String(),
  size_bytes: Type.Integer(),
  download_url: Type.String({ format: 'uri' }),
  expires_at: Type.String({ format: 'date-time' }),
});

export async function registerAttachmentRoutes(app: AppInstance, ctx: ServiceContext, runs: RunService): Promise<void> {
  app.get(
    '/agent/runs/:runId/handoff/attachments',
    {
      schema: {
        tags: ['runs'],
        operationId: 'listHandoffAttachments',
        summary: "The run's attachments, each with a download URL valid for one hour",
        params: RunIdParamsSchema,
        response: { 200: Type.Object({ attachments: Type.Array(AttachmentSchema) }) },
      },
    },
    async (request) => {
      const teamId = request.principal.teamId;
      const run = await runs.get(teamId, request.params.runId);
      const expiresAt = Date.now() + DOWNLOAD_URL_TTL_MS;
      const rows = await sql.listAttachmentMeta(ctx.db, run.id);
      return {
        attachments: rows.map((a) => ({
          attachment_id: a.file_name,
          filename: a.file_name,
          mime_type: a.mime_type,
          size_bytes: a.size_bytes,
          download_url: `${ctx.config.publicUrl}/api/v1/agent/attachments/${sealDownloadToken(ctx.cipher, {
            teamId,
            runId: run.id,
            fileName: a.file_name,
            expiresAt,
          })}`,
          expires_at: new Date(expiresAt).toISOString(),
        })),
      };
    },
  );

  app.get(
    '/agent/attachments/:token',
    {
      config: { public: true },
      schema: {
        tags: ['runs'],
        operationId: 'downloadAttachment',
        summary: 'Download a run attachment by the download_url of its listing (no API key: the URL is the credential)',
        params: Type.Object({ token: Type.String() }),
        security: [],
      },
    },
    async (request, reply) => {
      const grant = openDownloadToken(ctx.cipher, request.params.token);
      const file = await sql.getAttachment(ctx.db, grant.t, grant.r, grant.f);
      if (!file) throw new AppError('resource_not_found', 'no such attachment');
      const asciiName = file.file_name.replace(/[^\x20-\x7e]|["\\]/g, '_');
      return reply
        .type(file.mime_type)
        .header(
          'content-disposition',
          `attachment; filename="${asciiName}"; filename*=UTF-8''${encodeURIComponent(file.file_name)}`,
        )
        .header('cache-control', 'private, max-age=300')
        .send(file.data);
    },
  );
}
