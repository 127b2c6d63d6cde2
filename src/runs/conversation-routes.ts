/**
 * `GET /agent/runs/{runId}/conversation`, `GET /agent/conversations/{conversationId}` (ConversationResponse)
 * and `GET /agent/runs/{runId}/transcript`: a 302 to a download URL that carries its own authorisation
 * (sealed with the master key, valid for an hour), which answers every event of the run as JSON lines.
 */
import { Type } from 'typebox';
import type { AppInstance } from '../plugin.ts';
import type { ServiceContext } from '../context.ts';
import { AppError } from '../kernel/errors.ts';
import { buildConversation } from './conversation.ts';
import type { RunRow } from '../engine/model.ts';
import { getRun, listConversationRuns, runHasExecuted } from './sql.ts';
import { TRANSCRIPT_URL_TTL_MS, readTranscript, sealTranscriptToken } from './transcript.ts';
import { RunIdParamsSchema } from './schemas.ts';

const ContentBlockSchema = Type.Object({ type: Type.String() }, { additionalProperties: true });
const MessageSchema = Type.Object(
  {
    role: Type.Union([Type.Literal('user'), Type.Literal('assistant'), Type.Literal('tool'), Type.Literal('system')]),
    content: Type.Array(ContentBlockSchema),
    message_ids: Type.Optional(Type.Array(Type.String())),
    timestamp: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);
const StepSchema = Type.Object(
  {
    id: Type.String(),
    description: Type.Optional(Type.String()),
    summary: Type.Optional(Type.String()),
    started_at: Type.Optional(Type.String()),
    completed_at: Type.Optional(Type.String()),
    messages: Type.Array(MessageSchema),
    steps: Type.Array(Type.Object({}, { additionalProperties: true })),
  },
  { additionalProperties: true },
);
const ConversationSchema = Type.Object({ conversation_id: Type.String(), steps: Type.Array(StepSchema) });

export async function registerConversationRoutes(app: AppInstance, ctx: ServiceContext): Promise<void> {
  const runOf = async (teamId: string, runId: string): Promise<RunRow> => {
    const run = await getRun(ctx.db, teamId, runId);
    if (!run) throw new AppError('resource_not_found', `run ${runId} does not exist`);
    return run;
  };

  app.get(
    '/agent/runs/:runId/conversation',
    {
      schema: {
        tags: ['runs'],
        summary:
          "The run's conversation: one step per execution, with the prompt, follow-ups, agent messages, tool calls and results",
        params: RunIdParamsSchema,
        response: { 200: ConversationSchema },
      },
    },
    async (request) => {
      const run = await runOf(request.principal.teamId, request.params.runId);
      return buildConversation(ctx.db, run.conversation_id ?? run.id, [run]);
    },
  );

  app.get(
    '/agent/conversations/:conversationId',
    {
      schema: {
        tags: ['runs'],
        summary: 'A conversation: the runs whose id or conversation_id is this id, oldest first',
        params: Type.Object({ conversationId: Type.String() }),
        response: { 200: ConversationSchema },
      },
    },
    async (request) => {
      const id = request.params.conversationId;
      const runs = await listConversationRuns(ctx.db, request.principal.teamId, id);
      if (runs.length === 0) throw new AppError('resource_not_found', `conversation ${id} does not exist`);
      return buildConversation(ctx.db, id, runs);
    },
  );

  app.get(
    '/agent/runs/:runId/transcript',
    {
      schema: {
        tags: ['runs'],
        summary:
          "Redirects (302) to a download URL of the run's transcript (JSON lines, valid for an hour); 404 when the run never executed",
        params: RunIdParamsSchema,
        response: { 302: Type.Null({ description: 'Location: the download URL' }) },
      },
    },
    async (request, reply) => {
      const teamId = request.principal.teamId;
      const run = await runOf(teamId, request.params.runId);
      if (!(await runHasExecuted(ctx.db, run.id)))
        throw new AppError('resource_not_found', `run ${run.id} has no transcript: it has not executed yet`);
      const token = sealTranscriptToken(ctx.cipher, teamId, run.id, Date.now() + TRANSCRIPT_URL_TTL_MS);
      return reply.redirect(`${ctx.config.publicUrl}/api/v1/agent/transcripts/${token}`, 302);
    },
  );

  app.get(
    '/agent/transcripts/:token',
    {
      config: { public: true },
      schema: {
        tags: ['runs'],
        summary:
          "Download a run's transcript by the URL /transcript redirected to (no API key: the URL is the credential). JSON lines: a header, then every event.",
        params: Type.Object({ token: Type.String() }),
        security: [],
        produces: ['application/x-ndjson'],
      },
    },
    async (request, reply) => {
      const { run, events } = await readTranscript(ctx.db, ctx.cipher, request.params.token);
      const lines = [
        JSON.stringify({
          kind: 'run',
          run_id: run.id,
          title: run.title,
          prompt: run.prompt,
          state: run.state,
          created_at: run.created_at.toISOString(),
        }),
        ...events.map((e) =>
          JSON.stringify({
            kind: 'event',
            sequence: e.sequence,
            type: e.type,
            execution_id: e.execution_id,
            occurred_at: e.occurred_at.toISOString(),
            data: e.data,
          }),
        ),
      ];
      // bytes, not a string: sent as they are, and the console's in-process read is spared two encodings
      const bytes = Buffer.from(`${lines.join('\n')}\n`);
      return reply
        .type('application/x-ndjson; charset=utf-8')
        .header('content-disposition', `attachment; filename="${run.id}.transcript.jsonl"`)
        .header('cache-control', 'private, max-age=60')
        .send(bytes);
    },
  );
}
