import { loadRunTree } from './pages/run-tree.ts';
/**
 * A run's console routes: its page (streamed), an event's long body (its page and the page's fragment), its live
 * transcript, cancel (confirmed, then redirected so that a reload posts nothing), follow-ups, and its artifacts'
 * files.
 */
import type { RunScore } from './pages/scores.ts';
import { request as httpRequest } from 'node:http';
import { Readable } from 'node:stream';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { ApiProblem, enc } from './api.ts';
import type { Factory, Run, RunEventDoc } from './api-types.ts';
import { runState } from './format.ts';
import type { ConsoleKit, Signed, TranscriptReader } from './shared-routes.ts';
import { cancelConfirmPage, runPageStream } from './pages/run.ts';
import type { RunPageData } from './pages/run.ts';
import { SseReader } from './sse.ts';
import { runEventPage } from './pages/run-event.ts';
import {
  duration,
  eventBodyHtml,
  isoSeconds,
  renderArtifact,
  renderEvent,
  toolResultBody,
  usageText,
} from './transcript.ts';

/** What a redirect after a form may say on the run's page (`?done=` / `?failed=`): codes, never free text. */
const NOTICES: Record<string, string> = {
  cancel: 'Cancel requested: the agent is being stopped.',
  followup: 'Follow-up sent.',
  started: 'Run started.',
};
const FAILURES: Record<string, string> = {
  'cancel-finished': 'The run has already finished: there is nothing to cancel.',
  'cancel-busy': 'The run is being set up; try cancelling again in a moment.',
  'cancel-denied': 'Your key may not cancel this run.',
  'followup-empty': 'Write a message to send as a follow-up.',
  'followup-refused': 'The follow-up was refused by the API.',
};

interface AutomationStatus {
  name: string;
  webhook_triggers?: { webhook_uid: string; webhook_name: string | null }[];
}

/** The download token in the address `GET /agent/runs/{id}/transcript` redirects to. */
const TRANSCRIPT_PATH = /\/api\/v1\/agent\/transcripts\/([\w-]+)$/;

/**
 * The run's events so far. The API's `/transcript` checks the key and scopes the run to its team, and answers a
 * download address whose token names that team and run; the events are then read by that token in process: the
 * rows the download would serialise, without its JSON round trip. A run that never executed has none yet; the
 * page's live stream then brings its state events.
 */
export async function runHistory(s: Signed, runId: string, read: TranscriptReader): Promise<RunEventDoc[]> {
  let location: string;
  try {
    const redirect = await s.api.raw(`/agent/runs/${enc(runId)}/transcript`);
    location = String(redirect.headers.location ?? '');
  } catch (err) {
    if (err instanceof ApiProblem && err.status === 404) return [];
    throw err;
  }
  const token = TRANSCRIPT_PATH.exec(new URL(location, 'http://console.invalid').pathname)?.[1];
  if (!token) throw new ApiProblem(502, 'bad_gateway', 'the API answered no transcript download address');
  const rows = await read(token);
  if (!rows) return [];
  return rows.map((e) => ({
    sequence: e.sequence,
    run_id: runId,
    execution_id: e.execution_id,
    type: e.type,
    occurred_at: e.occurred_at.toISOString(),
    data: e.data,
  }));
}

interface NamedByRun {
  factory?: Factory;
  automation?: AutomationStatus;
  deliveryHref?: string;
  webhook?: { uid: string; name?: string };
}

const quiet = <T>(p: Promise<T>): Promise<T | undefined> => p.catch(() => undefined);

/**
 * What the run names: its factory, its automation, and the webhook delivery that started it (looked up among the
 * automation's webhooks at once; the first in the automation's order that holds it).
 */
async function namedByRun(kit: ConsoleKit, s: Signed, run: Run): Promise<NamedByRun> {
  const [factory, automation] = await Promise.all([
    run.factory_uid
      ? quiet(
          kit.lookups.get(s.session.csrf, `factory:${run.factory_uid}:self`, () =>
            s.api.get<Factory>(`/factories/${enc(run.factory_uid!)}`),
          ),
        )
      : undefined,
    run.automation_id ? quiet(s.api.get<AutomationStatus>(`/automations/${enc(run.automation_id)}`)) : undefined,
  ]);
  const out: NamedByRun = { ...(factory ? { factory } : {}), ...(automation ? { automation } : {}) };
  const deliveryId = run.delivery_id;
  if (!deliveryId) return out;
  const triggers = automation?.webhook_triggers ?? [];
  const found = await Promise.all(
    triggers.map((t) => quiet(s.api.get(`/webhooks/${enc(t.webhook_uid)}/deliveries/${enc(deliveryId)}`))),
  );
  const t = triggers[found.findIndex((f) => f !== undefined)];
  if (!t) return out;
  return {
    ...out,
    deliveryHref: `/console/webhooks/${enc(t.webhook_uid)}/deliveries/${enc(deliveryId)}`,
    webhook: { uid: t.webhook_uid, ...(t.webhook_name ? { name: t.webhook_name } : {}) },
  };
}

/**
 * The page's reads, through the JSON API with the caller's identity (the transcript's rows by the token the API
 * made for it: docs/decisions.md, "The run page reads its transcript's rows"). Only the factory, the automation and the
 * delivery depend on the run's answer: they start as soon as it comes, beside the transcript (the slowest read)
 * rather than after it. The tree holds the parent and the children.
 */
async function runPageData(kit: ConsoleKit, s: Signed, id: string): Promise<RunPageData> {
  const runRead = s.api.get<Run>(`/agent/runs/${enc(id)}`);
  const [run, events, tree, scores, named] = await Promise.all([
    runRead,
    runHistory(s, id, kit.transcript),
    quiet(loadRunTree(s.api, id)),
    quiet(s.api.get<{ scores: RunScore[] }>(`/agent/runs/${enc(id)}/scores`)),
    runRead.then((r) => namedByRun(kit, s, r)),
  ]);
  const treeRuns = tree ? [tree.root, ...tree.below] : [];
  const parent = run.parent_run_id ? treeRuns.find((r) => r.run_id === run.parent_run_id) : undefined;
  const children = treeRuns.filter((r) => r.parent_run_id === id).sort((a, b) => a.title.localeCompare(b.title));
  return {
    run,
    events,
    children,
    ...(parent ? { parent } : {}),
    ...(named.factory ? { factoryName: named.factory.name } : {}),
    ...(named.automation ? { automationName: named.automation.name } : {}),
    ...(named.deliveryHref ? { deliveryHref: named.deliveryHref } : {}),
    ...(scores?.scores.length ? { scores: scores.scores } : {}),
    ...(tree ? { tree } : {}),
    ...(named.webhook ? { webhook: named.webhook } : {}),
  };
}

/** The facts of the page that change as the run goes on. */
function liveFacts(run: Run): Record<string, string> {
  const seconds = isoSeconds(run.run_time);
  return {
    state: run.state,
    state_html: runState(run.state).text,
    status: run.status_message?.message ?? '—',
    duration: seconds !== undefined ? duration(seconds) : 'not started',
    usage: run.request_usage ? usageText(run.request_usage) : 'none yet',
  };
}

/** One event for the page's script: its transcript HTML, and what else on the page it changes. */
async function liveItem(s: Signed, runId: string, e: RunEventDoc): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = { seq: e.sequence, type: e.type, html: renderEvent(e).text };
  if (e.type === 'tool_result' && typeof e.data.id === 'string') {
    out.tool = e.data.id;
    out.result = toolResultBody(e).text;
  }
  if (e.type === 'artifact') {
    // The event carries what the agent reported; the run holds the artifact as recorded (its uid, its file).
    const run = await s.api.get<Run>(`/agent/runs/${enc(runId)}`).catch(() => undefined);
    if (run?.artifacts?.length) out.artifacts = run.artifacts.map((a) => renderArtifact(a).text).join('');
  }
  if (e.type === 'status' && typeof e.data.message === 'string') out.facts = { status: e.data.message };
  if (e.type === 'state' || e.type === 'usage' || e.type === 'result') {
    const run = await s.api.get<Run>(`/agent/runs/${enc(runId)}`).catch(() => undefined);
    if (run) out.facts = liveFacts(run);
    // The stream's state is the event's: the run may have moved on since, and a later event says so.
    if (e.type === 'state' && typeof e.data.state === 'string') {
      out.facts = { ...(out.facts as object), state: e.data.state, state_html: runState(e.data.state).text };
    }
  }
  return out;
}

export function registerRunRoutes(scope: FastifyInstance, kit: ConsoleKit): void {
  const { viewing, changing, sendPage } = kit;

  scope.get(
    '/console/runs/:id',
    viewing<{ id: string }>(async (s, request, reply) => {
      const data = await runPageData(kit, s, request.params.id);
      const done = NOTICES[request.query.done ?? ''];
      const failed = FAILURES[request.query.failed ?? ''];
      const pieces = runPageStream(s.viewer, {
        ...data,
        ...(done ? { notice: done } : {}),
        ...(failed ? { error: failed } : {}),
      });
      // Streamed: the page's head and facts go out while the transcript's items are still being rendered.
      return reply.type('text/html; charset=utf-8').send(Readable.from(pieces, { objectMode: false }));
    }),
  );

  /** One event through the API (`GET /agent/runs/{id}/events/{sequence}`): another team's run is not found. */
  const oneEvent = async (s: Signed, id: string, seq: string): Promise<RunEventDoc> => {
    if (!/^[1-9]\d{0,14}$/.test(seq)) throw new ApiProblem(404, 'resource_not_found', `run ${id} has no event ${seq}`);
    return s.api.get<RunEventDoc>(`/agent/runs/${enc(id)}/events/${seq}`);
  };

  // An event's long body (tool output, input, log), which the run page links to instead of sending it: its own
  // page, and the fragment console.js loads into the collapsed block when it is opened.
  scope.get(
    '/console/runs/:id/events/:seq',
    viewing<{ id: string; seq: string }>(async (s, request, reply) => {
      const { id, seq } = request.params;
      const [run, event] = await Promise.all([s.api.get<Run>(`/agent/runs/${enc(id)}`), oneEvent(s, id, seq)]);
      return sendPage(reply, runEventPage(s.viewer, run, event));
    }),
  );

  scope.get(
    '/console/runs/:id/events/:seq/body',
    viewing<{ id: string; seq: string }>(async (s, request, reply) => {
      const event = await oneEvent(s, request.params.id, request.params.seq);
      return sendPage(reply, eventBodyHtml(event).text);
    }),
  );

  scope.get(
    '/console/runs/:id/cancel',
    viewing<{ id: string }>(async (s, request, reply) =>
      sendPage(reply, cancelConfirmPage(s.viewer, await s.api.get<Run>(`/agent/runs/${enc(request.params.id)}`))),
    ),
  );

  const back = (id: string, query: string) => `/console/runs/${enc(id)}?${query}`;

  scope.post(
    '/console/runs/:id/cancel',
    changing<{ id: string }>(async (s, _form, request, reply) => {
      const id = request.params.id;
      try {
        await s.api.call('POST', `/agent/runs/${enc(id)}/cancel`);
      } catch (err) {
        if (!(err instanceof ApiProblem) || err.status >= 500 || err.status === 404) throw err;
        const code = err.status === 409 ? 'cancel-busy' : err.status === 403 ? 'cancel-denied' : 'cancel-finished';
        return reply.redirect(back(id, `failed=${code}`), 303);
      }
      return reply.redirect(back(id, 'done=cancel'), 303);
    }),
  );

  scope.post(
    '/console/runs/:id/followups',
    changing<{ id: string }>(async (s, form, request, reply) => {
      const id = request.params.id;
      if (!form.message?.trim()) {
        // another team's run is not found, whatever the form holds
        await s.api.get<Run>(`/agent/runs/${enc(id)}`);
        return reply.redirect(back(id, 'failed=followup-empty'), 303);
      }
      try {
        await s.api.call('POST', `/agent/runs/${enc(id)}/followups`, { message: form.message });
      } catch (err) {
        if (!(err instanceof ApiProblem) || err.status >= 500 || err.status === 404) throw err;
        return reply.redirect(back(id, 'failed=followup-refused'), 303);
      }
      return reply.redirect(back(id, 'done=followup'), 303);
    }),
  );

  // The run's transcript live: the API's server-sent events, read on this server's own listening socket (a
  // stream cannot go through inject(), which waits for the end), each rendered here as the page renders it.
  scope.get(
    '/console/runs/:id/live',
    viewing<{ id: string }>(async (s, request, reply) => {
      const runId = request.params.id;
      const address = kit.root.server.address() as AddressInfo | null;
      if (!address || typeof address !== 'object')
        throw new ApiProblem(503, 'unavailable', 'the server is not listening');
      const host = address.address === '::' || address.address === '0.0.0.0' ? '127.0.0.1' : address.address;
      const lastId = request.headers['last-event-id'];
      const since = /^\d{1,15}$/.test(request.query.since ?? '') ? request.query.since : '0';
      const upstream = httpRequest({
        host,
        port: address.port,
        path: `/api/v1/agent/runs/${enc(runId)}/events?since=${since}`,
        headers: {
          authorization: `Bearer ${s.session.key}`,
          accept: 'text/event-stream',
          ...(typeof lastId === 'string' && /^\d{1,15}$/.test(lastId) ? { 'last-event-id': lastId } : {}),
        },
      });
      reply.hijack();
      const res = reply.raw;
      const reader = new SseReader();
      // Events are rendered in order even when one waits for the run's facts.
      let chain = Promise.resolve();
      upstream.on('response', (answer) => {
        res.writeHead(answer.statusCode ?? 502, {
          'content-type': answer.statusCode === 200 ? 'text/event-stream; charset=utf-8' : 'text/plain',
          'cache-control': 'no-store',
          'content-security-policy': kit.csp,
          'x-content-type-options': 'nosniff',
        });
        if (answer.statusCode !== 200) {
          answer.resume();
          res.end();
          return;
        }
        res.write('retry: 2000\n\n');
        answer.setEncoding('utf8');
        answer.on('data', (chunk: string) => {
          const messages = reader.push(chunk);
          if (messages.length === 0 && chunk.includes(': keep-alive'))
            chain = chain.then(() => void res.write(': keep-alive\n\n'));
          for (const m of messages) {
            chain = chain.then(async () => {
              if (m.event === 'end') {
                res.write(`event: end\ndata: ${m.data}\n\n`);
                return;
              }
              let e: RunEventDoc;
              try {
                e = JSON.parse(m.data) as RunEventDoc;
              } catch {
                return;
              }
              const item = await liveItem(s, runId, e);
              res.write(`id: ${e.sequence}\nevent: item\ndata: ${JSON.stringify(item)}\n\n`);
            });
          }
        });
        answer.on('end', () => {
          chain = chain.then(() => void res.end());
        });
      });
      upstream.on('error', () => {
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
        res.end();
      });
      request.raw.on('close', () => upstream.destroy());
      upstream.end();
    }),
  );

  /** An artifact's file, read through its signed download URL, which the API hands to this key. */
  const artifactFile = (inline: boolean) =>
    viewing<{ uid: string }>(async (s, request, reply) => {
      const artifact = await s.api.get<{ artifact_type: string; data: Record<string, unknown> }>(
        `/agent/artifacts/${enc(request.params.uid)}`,
      );
      const url = typeof artifact.data.download_url === 'string' ? new URL(artifact.data.download_url) : undefined;
      if (!url) throw new ApiProblem(404, 'resource_not_found', 'this artifact has no file');
      const file = await s.api.raw(`${url.pathname}${url.search}`);
      const type = String(file.headers['content-type'] ?? 'application/octet-stream');
      const name = typeof artifact.data.filename === 'string' ? artifact.data.filename : 'artifact';
      // An image is shown in the page; anything else (and SVG, which may carry script) is only downloaded.
      const showable = inline && /^image\/(png|jpeg|gif|webp)$/.test(type);
      return reply
        .type(type)
        .header('content-disposition', showable ? 'inline' : `attachment; filename="${name.replace(/[^\w.-]/g, '_')}"`)
        .header('content-security-policy', "sandbox; default-src 'none'")
        .header('cache-control', 'private, max-age=300')
        .send(file.bytes);
    });
  scope.get('/console/artifacts/:uid/download', artifactFile(false));
  scope.get('/console/artifacts/:uid/view', artifactFile(true));
}
