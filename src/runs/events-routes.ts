/**
 * Live events: `GET /agent/runs/{runId}/events` as server-sent events (`id:` = the event's sequence; a
 * client resumes with `Last-Event-ID` and gets exactly the events after it), and the reference's internal
 * `GET /agent/events` (poll) and `POST /agent/events/{runId}` (report).
 */
import { RUN_CHANGED_TOPIC, RUN_EVENTS_TOPIC } from '../kernel/topics.ts';
import { Type } from 'typebox';
import type { AppInstance } from '../plugin.ts';
import type { ServiceContext } from '../context.ts';
import { AppError } from '../kernel/errors.ts';
import type { StoredRunEvent } from '../engine/events.ts';
import { getRun, getRunEvent, listEventsOfRuns, listRunEvents, ownRunIds } from './sql.ts';
import { RunIdParamsSchema } from './schemas.ts';
import type { RunEvent } from '../engine/state-machine.ts';
import { isRunState, isTerminal } from '../engine/state-machine.ts';
import { appendRunEvents, applyRunEvent } from '../engine/engine.ts';
import { announceRunChanges } from '../engine/announce.ts';

const KEEPALIVE_MS = 15_000;
const POLL_MS = 1_000;

/** The reference's `event_type` of a state change (`run_in_progress`...), or the event's own type. */
export function referenceEventType(e: StoredRunEvent): string {
  if (e.type !== 'state') return e.type;
  const state = String(e.data.state ?? '');
  const names: Record<string, string> = {
    INPROGRESS: 'run_in_progress',
    SUCCEEDED: 'run_succeeded',
    FAILED: 'run_failed',
    ERROR: 'run_errored',
    BLOCKED: 'run_blocked',
    CANCELLED: 'run_cancelled',
  };
  return names[state] ?? `run_${state.toLowerCase()}`;
}

function eventDocument(e: StoredRunEvent): Record<string, unknown> {
  return {
    sequence: e.sequence,
    run_id: e.run_id,
    execution_id: e.execution_id,
    type: e.type,
    occurred_at: e.occurred_at.toISOString(),
    data: e.data,
  };
}

function parseLastEventId(header: string | string[] | undefined, since: number | undefined): number {
  const raw = Array.isArray(header) ? header[0] : header;
  if (raw !== undefined && raw.trim() !== '') {
    const n = Number(raw.trim());
    if (!Number.isSafeInteger(n) || n < 0)
      throw new AppError(
        'invalid_request',
        `Last-Event-ID must be an event sequence (a non-negative integer), got "${raw}"`,
      );
    return n;
  }
  return since ?? 0;
}

const REPORTED: Record<string, RunEvent> = {
  run_in_progress: 'start',
  run_succeeded: 'succeed',
  run_failed: 'fail',
  run_errored: 'error',
  run_blocked: 'block',
  run_cancelled: 'cancel',
};

export async function registerEventRoutes(app: AppInstance, ctx: ServiceContext): Promise<void> {
  app.get(
    '/agent/runs/:runId/events',
    {
      schema: {
        tags: ['runs'],
        summary:
          "The run's events as server-sent events (text/event-stream): the history, then live ones. `id:` is the event's sequence; resume with Last-Event-ID (or ?since=). The stream ends with an `end` event once the run is finished and every event is sent; ?follow=false ends it after the history.",
        params: RunIdParamsSchema,
        querystring: Type.Object({
          since: Type.Optional(
            Type.Integer({ minimum: 0, description: 'Send the events after this sequence (Last-Event-ID wins)' }),
          ),
          follow: Type.Optional(Type.Boolean({ default: true })),
        }),
        produces: ['text/event-stream'],
      },
    },
    async (request, reply) => {
      const teamId = request.principal.teamId;
      const runId = request.params.runId;
      const run = await getRun(ctx.db, teamId, runId);
      if (!run) throw new AppError('resource_not_found', `run ${runId} does not exist`);
      // the run's state as of the last event sent: every state change is an event (a trigger writes it)
      let state: string = run.state;
      let last = parseLastEventId(request.headers['last-event-id'], request.query.since);
      const follow = request.query.follow !== false;

      reply.hijack();
      const res = reply.raw;
      res.socket?.setNoDelay(true);
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });
      res.write('retry: 2000\n\n');

      let closed = false;
      let wake: (() => void) | undefined;
      // set by a nudge that arrives while the loop is reading, so that it does not go to sleep on it
      let dirty = false;
      const nudge = (data: unknown) => {
        const d = data as { run_id?: string; run_ids?: string[] } | null;
        if (d?.run_id !== runId && !d?.run_ids?.includes(runId)) return;
        dirty = true;
        wake?.();
      };
      const unsubscribe = [ctx.bus.subscribe(RUN_EVENTS_TOPIC, nudge), ctx.bus.subscribe(RUN_CHANGED_TOPIC, nudge)];
      const close = () => {
        if (closed) return;
        closed = true;
        for (const u of unsubscribe) u();
        wake?.();
        res.end();
      };
      request.raw.on('close', close);
      res.on('error', close);

      try {
        let lastSent = Date.now();
        while (!closed) {
          dirty = false;
          const events = await listRunEvents(ctx.db, runId, last, 500);
          if (events.length > 0) {
            res.write(
              events
                .map((e) => `id: ${e.sequence}\nevent: ${e.type}\ndata: ${JSON.stringify(eventDocument(e))}\n\n`)
                .join(''),
            );
            for (const e of events) if (e.type === 'state' && typeof e.data.state === 'string') state = e.data.state;
            last = events.at(-1)!.sequence;
            lastSent = Date.now();
          }
          if (events.length === 500) continue;
          if (!follow || (isRunState(state) && isTerminal(state))) {
            res.write(`event: end\ndata: ${JSON.stringify({ run_id: runId, state, last_sequence: last })}\n\n`);
            break;
          }
          if (dirty) continue;
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, POLL_MS);
            wake = () => {
              clearTimeout(timer);
              resolve();
            };
          });
          wake = undefined;
          if (Date.now() - lastSent > KEEPALIVE_MS) {
            res.write(': keep-alive\n\n');
            lastSent = Date.now();
          }
        }
      } catch (err) {
        request.log.warn({ err, runId }, 'event stream failed');
      } finally {
        close();
      }
    },
  );

  app.get(
    '/agent/runs/:runId/events/:sequence',
    {
      schema: {
        tags: ['runs'],
        summary:
          'One event of the run by its sequence, as the event stream sends it (`sequence`, `run_id`, `execution_id`, `type`, `occurred_at`, `data`)',
        params: Type.Object({
          runId: Type.String({ minLength: 1 }),
          sequence: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
        }),
      },
    },
    async (request) => {
      const { runId, sequence } = request.params;
      const run = await getRun(ctx.db, request.principal.teamId, runId);
      if (!run) throw new AppError('resource_not_found', `run ${runId} does not exist`);
      const event = await getRunEvent(ctx.db, runId, sequence);
      if (!event) throw new AppError('resource_not_found', `run ${runId} has no event ${sequence}`);
      return eventDocument(event);
    },
  );

  const PolledEvent = Type.Object({
    event_type: Type.String(),
    run_id: Type.String(),
    ref_id: Type.Union([Type.String(), Type.Null()]),
    execution_id: Type.Union([Type.String(), Type.Null()]),
    occurred_at: Type.String({ format: 'date-time' }),
    sequence: Type.Integer(),
  });

  app.get(
    '/agent/events',
    {
      schema: {
        tags: ['runs'],
        summary:
          'Events of runs after a sequence (internal poll endpoint of the reference); `since` applies to each run’s own sequence',
        querystring: Type.Object({
          run_ids: Type.Array(Type.String(), { minItems: 1, maxItems: 100 }),
          since: Type.Optional(Type.Integer({ minimum: 0, default: 0 })),
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 100 })),
        }),
        response: { 200: Type.Array(PolledEvent) },
      },
    },
    async (request) => {
      const ids = await ownRunIds(ctx.db, request.principal.teamId, request.query.run_ids);
      if (ids.length === 0) return [];
      const events = await listEventsOfRuns(ctx.db, ids, request.query.since ?? 0, request.query.limit ?? 100);
      return events.map((e) => ({
        event_type: referenceEventType(e),
        run_id: e.run_id,
        ref_id:
          typeof e.data.followup_id === 'string'
            ? e.data.followup_id
            : typeof e.data.ref_id === 'string'
              ? e.data.ref_id
              : typeof e.data.id === 'string'
                ? e.data.id
                : null,
        execution_id: e.execution_id,
        occurred_at: e.occurred_at.toISOString(),
        sequence: e.sequence,
      }));
    },
  );

  app.post(
    '/agent/events/:runId',
    {
      schema: {
        tags: ['runs'],
        summary:
          "Report a lifecycle event of a run (internal endpoint of the reference). Recorded as a `status` event; it moves the run's state only when execution_id names the run's current execution.",
        params: RunIdParamsSchema,
        body: Type.Object({
          event_type: Type.Union(Object.keys(REPORTED).map((k) => Type.Literal(k))),
          execution_id: Type.Optional(Type.String()),
          ref_id: Type.Optional(Type.String()),
        }),
        response: { 200: Type.Object({ sequence: Type.Integer() }) },
      },
    },
    async (request) => {
      const teamId = request.principal.teamId;
      const runId = request.params.runId;
      const body = request.body;
      const { sequence, moved } = await ctx.db.transaction(async (tx) => {
        if (!(await getRun(tx, teamId, runId))) throw new AppError('resource_not_found', `run ${runId} does not exist`);
        const moved = body.execution_id
          ? await applyRunEvent(tx, runId, REPORTED[body.event_type]!, {
              teamId,
              executionId: body.execution_id,
              statusMessage: { message: `Reported: ${body.event_type}` },
            })
          : undefined;
        const sequence = await appendRunEvents(tx, runId, body.execution_id ?? null, [
          {
            type: 'status',
            data: {
              message: `Reported: ${body.event_type}`,
              event_type: body.event_type,
              reported: true,
              ...(body.ref_id ? { ref_id: body.ref_id } : {}),
            },
          },
        ]);
        return { sequence, moved };
      });
      await ctx.bus.publish(RUN_EVENTS_TOPIC, { run_id: runId, sequence });
      if (moved) await announceRunChanges(ctx.bus, [moved]);
      else await ctx.bus.publish(RUN_CHANGED_TOPIC, { run_id: runId });
      return { sequence: sequence ?? 0 };
    },
  );
}
