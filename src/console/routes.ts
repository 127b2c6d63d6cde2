import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Cipher } from '../kernel/caller.ts';
import { LookupCache } from './lookup-cache.ts';
import { deliveryRuns } from './delivery-runs.ts';
import { ApiProblem, ConsoleApi, enc } from './api.ts';
import type {
  Apply,
  Automation,
  CreatedWebhook,
  DefinitionFile,
  Delivery,
  Factory,
  PageInfo,
  Run,
  Webhook,
  WhoAmI,
} from './api-types.ts';
import { html } from './html.ts';
import { confirmPage, errorBox, page } from './layout.ts';
import type { Viewer } from './layout.ts';
import { factoryPage, filePage } from './pages/factory.ts';
import type { FactoryPageData } from './pages/factory.ts';
import { ACTIVE_RUN_STATES, overviewLive, overviewPage } from './pages/overview.ts';
import { RUN_FILTERS, runsPage } from './pages/runs.ts';
import type { RunFilters, RunSort } from './pages/runs.ts';
import { agentPage } from './pages/scores.ts';
import type { ScoreDay } from './pages/scores.ts';
import { signInPage } from './pages/sign-in.ts';
import { PAGE_CSP, crossSiteReason } from '../kernel/page-security.ts';
import { deliveryPage, deliveryRow, webhookPage } from './pages/webhook.ts';
import type { DeliveryDetail, Lockout, TestFilterResult } from './pages/webhook.ts';
import {
  SESSION_COOKIE,
  clearedSessionCookie,
  cookieValue,
  csrfMatches,
  openSession,
  sealSession,
  sessionCookie,
} from './session.ts';
import type { ConsoleKit, Form, Signed, TranscriptReader } from './shared-routes.ts';
import { registerRunRoutes } from './run-routes.ts';
import { lineDiff, unifiedDiff } from './line-diff.ts';
import { revisionPage } from './pages/revision.ts';
import type { RevisionFileDiff, RevisionPageData } from './pages/revision.ts';
import { registerSettingsRoutes } from './settings-routes.ts';
import { registerProviderDeliveryRoutes } from './provider-delivery-routes.ts';

const REPLAY_NOTICE = 'This is a replay: it is evaluated against the current automations like any delivery.';
const REPLAY_FAILURES: Record<string, string> = {
  'replay-denied': 'Only a team admin may replay a delivery.',
  'replay-refused': 'Only an accepted delivery, with its payload, can be replayed.',
};

/** The files of `after` against `before`: added, changed (with a unified diff) and removed, by path. */
function compareFiles(before: readonly DefinitionFile[], after: readonly DefinitionFile[]): RevisionFileDiff[] {
  const old = new Map(before.map((f) => [f.path, f.content]));
  const now = new Map(after.map((f) => [f.path, f.content]));
  const out: RevisionFileDiff[] = [];
  for (const path of [...new Set([...old.keys(), ...now.keys()])].sort()) {
    const a = old.get(path);
    const b = now.get(path);
    if (a === b) continue;
    if (a === undefined || b === undefined) {
      const [status, sign, text] = a === undefined ? (['added', '+', b!] as const) : (['removed', '-', a] as const);
      out.push({
        path,
        status,
        diff: `@@ ${status} @@\n${text
          .split('\n')
          .map((l) => `${sign}${l}`)
          .join('\n')}`,
      });
      continue;
    }
    const lines = lineDiff(a, b);
    out.push({ path, status: 'changed', diff: lines && unifiedDiff(lines) });
  }
  return out;
}

export interface ConsoleOptions {
  cipher: Cipher;
  /** Whether the server is reached over HTTPS (then the cookie is `Secure`). */
  secureCookies: boolean;
  /** The server's public URL (read at each request): a sign-in form must come from it or from the Host asked. */
  publicUrl: () => string;
  /** The run page's transcript read by the API's download token, without the download's JSON round trip. */
  transcript: TranscriptReader;
}

const FORM_BODY_LIMIT = 512 * 1024;
const ASSETS = path.join(import.meta.dirname, 'assets');
const ASSET_TYPES: Record<string, string> = {
  'console.css': 'text/css; charset=utf-8',
  'console.js': 'text/javascript; charset=utf-8',
  'favicon.svg': 'image/svg+xml',
};

/** The web console: pages rendered on the server from the JSON API, under `/` and `/console/`. */
export async function consoleRoutes(app: FastifyInstance, options: ConsoleOptions): Promise<void> {
  // `app` is the whole application: the console calls its API routes in process.
  const root = app;
  const lookups = new LookupCache();
  await app.register(async (scope) => {
    scope.addContentTypeParser(
      'application/x-www-form-urlencoded',
      { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT },
      (_req, body, done) => {
        const form: Form = {};
        for (const [k, v] of new URLSearchParams(body as string)) form[k] = v;
        done(null, form);
      },
    );
    scope.addHook('onSend', async (_request, reply, payload) => {
      if (!reply.hasHeader('content-security-policy')) reply.header('content-security-policy', PAGE_CSP);
      reply.header('x-content-type-options', 'nosniff');
      reply.header('referrer-policy', 'same-origin');
      reply.header('x-frame-options', 'DENY');
      if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
      return payload;
    });

    // The key is checked by every API call a page makes: a revoked or expired key ends the session there.
    const signedIn = (request: FastifyRequest): Signed | undefined => {
      const session = openSession(options.cipher, cookieValue(request.headers.cookie, SESSION_COOKIE));
      if (!session) return undefined;
      return {
        session,
        api: new ConsoleApi(root, session.key, request.ip),
        viewer: { ...session.identity, csrf: session.csrf },
      };
    };

    const signedOut = (reply: FastifyReply) =>
      reply.header('set-cookie', clearedSessionCookie(options.secureCookies)).redirect('/', 303);

    const sendPage = (reply: FastifyReply, body: string, status = 200) =>
      reply.code(status).type('text/html; charset=utf-8').send(body);

    const problemPage = (reply: FastifyReply, viewer: Viewer, err: unknown) => {
      if (!(err instanceof ApiProblem)) throw err;
      if (err.status === 401) return signedOut(reply);
      const title = err.status === 404 ? 'Not found' : err.status === 403 ? 'Not allowed' : 'Something went wrong';
      return sendPage(
        reply,
        page({ title, viewer, section: 'none', body: html`<h1>${title}</h1>${errorBox(err.detail)}` }),
        err.status,
      );
    };

    /** A page for signed-in people; anyone else is sent to the sign-in form. */
    const viewing =
      <P>(
        render: (
          s: Signed,
          request: FastifyRequest<{ Params: P; Querystring: Record<string, string> }>,
          reply: FastifyReply,
        ) => Promise<unknown>,
      ) =>
      async (request: FastifyRequest<{ Params: P; Querystring: Record<string, string> }>, reply: FastifyReply) => {
        const s = signedIn(request);
        if (!s) return reply.redirect('/', 303);
        try {
          return await render(s, request, reply);
        } catch (err) {
          return problemPage(reply, s.viewer, err);
        }
      };

    /** A form post: signed in, the session's CSRF token, then the change. */
    const changing =
      <P>(
        act: (
          s: Signed,
          form: Form,
          request: FastifyRequest<{ Params: P; Querystring: Record<string, string> }>,
          reply: FastifyReply,
        ) => Promise<unknown>,
      ) =>
      async (request: FastifyRequest<{ Params: P; Querystring: Record<string, string> }>, reply: FastifyReply) => {
        const s = signedIn(request);
        if (!s) return reply.redirect('/', 303);
        const form = (request.body ?? {}) as Form;
        if (typeof form !== 'object' || !csrfMatches(s.session, form.csrf)) {
          return sendPage(
            reply,
            page({
              title: 'Form expired',
              viewer: s.viewer,
              body: html`<h1>Form expired</h1>${errorBox('This form did not come from your current session. Go back, reload the page and try again.')}`,
            }),
            403,
          );
        }
        lookups.forget(s.session.csrf);
        try {
          return await act(s, form, request, reply);
        } catch (err) {
          return problemPage(reply, s.viewer, err);
        }
      };

    scope.get('/console/assets/:file', async (request: FastifyRequest<{ Params: { file: string } }>, reply) => {
      const type = ASSET_TYPES[request.params.file];
      if (!type) return reply.code(404).type('text/plain').send('not found');
      const body = await readFile(path.join(ASSETS, request.params.file));
      return reply.type(type).header('cache-control', 'public, max-age=300').send(body);
    });

    scope.get('/favicon.ico', async (_request, reply) =>
      reply
        .type('image/svg+xml')
        .header('cache-control', 'public, max-age=86400')
        .send(await readFile(path.join(ASSETS, 'favicon.svg'))),
    );

    // Any other address under /console/ is a page that does not exist: an HTML 404, signed in or not.
    const notFound = async (request: FastifyRequest, reply: FastifyReply) => {
      const s = signedIn(request);
      return sendPage(
        reply,
        page({
          title: 'Not found',
          ...(s ? { viewer: s.viewer } : {}),
          section: 'none',
          body: html`<h1>Not found</h1><p>There is no console page at <code>${request.url.split('?')[0] ?? ''}</code>.</p><p><a href="/">Go to the overview</a>${s ? html` or <a href="/console/runs">the runs</a>` : ''}.</p>`,
        }),
        404,
      );
    };
    scope.get('/console', notFound);
    scope.get('/console/*', notFound);

    /** Runs counted by active state (one grouped count through the API), the newest active runs, deliveries. */
    const overviewLiveData = async (s: Signed) => {
      const [counts, active, stats] = await Promise.all([
        s.api.get<{ counts: Record<string, number> }>(
          `/run-counts?${ACTIVE_RUN_STATES.map((state) => `state=${state}`).join('&')}`,
        ),
        s.api.get<{ runs: Run[] }>(
          `/agent/runs?${ACTIVE_RUN_STATES.map((state) => `state=${state}`).join('&')}&limit=20&sort_by=updated_at`,
        ),
        s.api.get<{ deliveries: number }>('/delivery-stats', { minutes: '60' }),
      ]);
      const byState = ACTIVE_RUN_STATES.map((state) => ({ state, count: counts.counts[state] ?? 0 }));
      return { runs: { byState, active: active.runs }, deliveriesLastHour: stats.deliveries };
    };

    const overview = async (s: Signed, reply: FastifyReply, error?: string) => {
      const [list, live, blocked] = await Promise.all([
        s.api.get<{ factories: Factory[]; page_info: PageInfo }>('/factories', { limit: '100', counts: 'true' }),
        overviewLiveData(s),
        s.api.get<{ runs: Run[] }>('/agent/runs', { state: 'BLOCKED', limit: '20', sort_by: 'updated_at' }),
      ]);
      let factories = list.factories;
      let more = list.page_info;
      // The overview lists every factory, a hundred per API page.
      while (more.has_next_page && more.next_cursor && factories.length < 1000) {
        const next = await s.api.get<{ factories: Factory[]; page_info: PageInfo }>('/factories', {
          limit: '100',
          counts: 'true',
          cursor: more.next_cursor,
        });
        factories = factories.concat(next.factories);
        more = next.page_info;
      }
      return sendPage(
        reply,
        overviewPage(s.viewer, {
          factories,
          moreFactories: more.has_next_page,
          ...live,
          blocked: blocked.runs,
          ...(error ? { error } : {}),
        }),
        error ? 422 : 200,
      );
    };

    scope.get(
      '/console/overview.html',
      viewing<Record<string, never>>(async (s, _request, reply) =>
        reply.type('text/html; charset=utf-8').send(overviewLive(await overviewLiveData(s)).text),
      ),
    );

    scope.get('/', async (request, reply) => {
      const s = signedIn(request);
      if (!s) return sendPage(reply, signInPage());
      try {
        return await overview(s, reply);
      } catch (err) {
        return problemPage(reply, s.viewer, err);
      }
    });

    scope.post(
      '/console/factories',
      changing(async (s, form, _request, reply) => {
        const url = form.url?.trim();
        try {
          const created = await s.api.call<Factory>('POST', '/factories', {
            name: form.name?.trim() ?? '',
            ...(url
              ? {
                  source: {
                    type: 'git',
                    url,
                    branch: form.branch?.trim() || 'main',
                    ...(form.path?.trim() ? { path: form.path.trim() } : {}),
                  },
                }
              : {}),
          });
          return reply.redirect(`/console/factories/${enc(created.id)}`, 303);
        } catch (err) {
          if (!(err instanceof ApiProblem) || err.status >= 500) throw err;
          return overview(s, reply, `The factory was not registered: ${err.detail}`);
        }
      }),
    );

    // Login CSRF: a page elsewhere must not sign a browser in (as its author). There is no session yet, so no
    // CSRF token: the browser's own Sec-Fetch-Site and Origin say where the form was posted from. Wrong keys
    // count against the address's failed-key budget through the API call (429 once it is spent).
    scope.post('/console/sign-in', async (request, reply) => {
      const crossSite = crossSiteReason(request.headers, options.publicUrl());
      if (crossSite) {
        request.log.warn({ reason: crossSite }, 'cross-site console sign-in refused');
        return sendPage(reply, signInPage('Sign in from this console’s own page.'), 403);
      }
      const form = (request.body ?? {}) as Form;
      const key = typeof form.api_key === 'string' ? form.api_key.trim() : '';
      if (!key || key.length > 512) return sendPage(reply, signInPage('Enter an API key.'), 400);
      let me: WhoAmI;
      try {
        me = await new ConsoleApi(root, key, request.ip).get<WhoAmI>('/whoami');
      } catch (err) {
        if (err instanceof ApiProblem && err.status === 401) {
          return sendPage(reply, signInPage('That API key is invalid, expired or revoked.'), 401);
        }
        if (err instanceof ApiProblem && err.status === 429) {
          if (err.retryAfter) reply.header('retry-after', err.retryAfter);
          return sendPage(reply, signInPage('Too many failed sign-ins from this address: wait and try again.'), 429);
        }
        throw err;
      }
      const { value } = sealSession(options.cipher, key, {
        teamName: me.team.name ?? me.team.id,
        displayName: me.principal.display_name,
        role: me.role,
        instanceAdmin: me.instance_admin,
      });
      return reply.header('set-cookie', sessionCookie(value, options.secureCookies)).redirect('/', 303);
    });

    scope.post(
      '/console/sign-out',
      changing(async (_s, _form, _request, reply) =>
        reply.header('set-cookie', clearedSessionCookie(options.secureCookies)).redirect('/', 303),
      ),
    );

    const factoryData = async (s: Signed, id: string): Promise<FactoryPageData> => {
      const factory = await s.api.get<Factory>(`/factories/${enc(id)}`);
      const [applies, definition, webhooks, automations] = await Promise.all([
        s.api.get<{ applies: Apply[] }>(`/factories/${enc(id)}/applies`, { limit: '20' }),
        s.api.get<{ files: DefinitionFile[] }>(`/factories/${enc(id)}/definition`),
        s.api.get<{ webhooks: Webhook[] }>(`/factories/${enc(id)}/webhooks`),
        s.api.get<{ automations: Automation[] }>(`/factories/${enc(id)}/automations`),
      ]);
      return {
        factory,
        applies: applies.applies,
        files: definition.files,
        webhooks: webhooks.webhooks,
        automations: automations.automations,
      };
    };

    scope.get(
      '/console/factories/:id',
      viewing<{ id: string }>(async (s, request, reply) =>
        sendPage(reply, factoryPage(s.viewer, await factoryData(s, request.params.id))),
      ),
    );

    scope.get(
      '/console/factories/:id/agents/:agent',
      viewing<{ id: string; agent: string }>(async (s, request, reply) => {
        const factory = await s.api.get<Factory>(`/factories/${enc(request.params.id)}`);
        const since = new Date(Date.now() - 90 * 86_400_000).toISOString();
        const stats = await s.api.get<{ days: ScoreDay[] }>('/agent/scores', {
          agent: request.params.agent,
          factory_id: factory.id,
          since,
        });
        return sendPage(reply, agentPage(s.viewer, { factory, agent: request.params.agent, days: stats.days }));
      }),
    );

    scope.get(
      '/console/factories/:id/files/*',
      viewing<{ id: string; '*': string }>(async (s, request, reply) => {
        const id = request.params.id;
        const file = request.params['*'];
        const factory = await s.api.get<Factory>(`/factories/${enc(id)}`);
        // A problem of a refused revision is in that revision's file: shown from there when the API kept it.
        const attempted = factory.status.attempted_revision;
        const refused =
          attempted && attempted !== factory.status.applied_revision && factory.status.errors.length > 0
            ? await s.api
                .get<{ files: DefinitionFile[] }>(`/factories/${enc(id)}/revisions/${enc(attempted)}/files`)
                .catch((err: unknown) => {
                  if (err instanceof ApiProblem && err.status === 404) return undefined;
                  throw err;
                })
            : undefined;
        const refusedContent = refused?.files.find((f) => f.path === file)?.content;
        const definition =
          refusedContent === undefined
            ? await s.api.get<{ files: DefinitionFile[] }>(`/factories/${enc(id)}/definition`)
            : undefined;
        const content = refusedContent ?? definition?.files.find((f) => f.path === file)?.content;
        if (content === undefined && !factory.status.errors.some((d) => d.file === file)) {
          throw new ApiProblem(404, 'resource_not_found', `${file} is not a file of this factory`);
        }
        return sendPage(
          reply,
          filePage(s.viewer, factory, file, content, factory.status.errors, refusedContent !== undefined),
        );
      }),
    );

    // A revision (the applied one's or the latest refused one's files, as the API keeps them) against the applied.
    scope.get(
      '/console/factories/:id/revisions/:revision',
      viewing<{ id: string; revision: string }>(async (s, request, reply) => {
        const { id, revision } = request.params;
        const [factory, definition, target] = await Promise.all([
          s.api.get<Factory>(`/factories/${enc(id)}`),
          s.api.get<{ files: DefinitionFile[] }>(`/factories/${enc(id)}/definition`),
          s.api.get<{ files: DefinitionFile[] }>(`/factories/${enc(id)}/revisions/${enc(revision)}/files`),
        ]);
        const plan = await s.api.call<RevisionPageData['plan']>('POST', `/factories/${enc(id)}/plan`, {
          files: target.files,
        });
        return sendPage(
          reply,
          revisionPage(s.viewer, { factory, revision, files: compareFiles(definition.files, target.files), plan }),
        );
      }),
    );

    const backToFactory = (id: string) => `/console/factories/${enc(id)}`;

    scope.post(
      '/console/factories/:id/sync',
      changing<{ id: string }>(async (s, _form, request, reply) => {
        await s.api.call('POST', `/factories/${enc(request.params.id)}/sync`);
        return reply.redirect(backToFactory(request.params.id), 303);
      }),
    );

    scope.post(
      '/console/factories/:id/webhooks',
      changing<{ id: string }>(async (s, form, request, reply) => {
        const id = request.params.id;
        let created: CreatedWebhook | undefined;
        let error: string | undefined;
        try {
          created = await s.api.call<CreatedWebhook>('POST', `/factories/${enc(id)}/webhooks`, {
            name: form.name ?? '',
            auth_mode: form.auth_mode ?? 'token',
            ...(form.auth_mode === 'signature' && form.signature_scheme
              ? { signature_scheme: form.signature_scheme }
              : {}),
          });
        } catch (err) {
          if (!(err instanceof ApiProblem) || err.status >= 500) throw err;
          error = `The webhook was not created: ${err.detail}`;
        }
        // Rendered, not redirected: the secret is shown this once and never travels in a URL.
        const data = await factoryData(s, id);
        return sendPage(
          reply,
          factoryPage(s.viewer, { ...data, ...(created ? { created } : {}), ...(error ? { error } : {}) }),
          error ? 422 : 201,
        );
      }),
    );

    scope.post(
      '/console/factories/:id/automations',
      changing<{ id: string }>(async (s, form, request, reply) => {
        const id = request.params.id;
        let error: string | undefined;
        try {
          if (!form.webhook)
            throw new ApiProblem(422, 'invalid_request', 'choose the webhook the automation listens to');
          const filter: Record<string, unknown> = { webhook_ids: [form.webhook] };
          if (form.filter?.trim()) filter.payload = JSON.parse(form.filter) as unknown;
          await s.api.call('POST', `/factories/${enc(id)}/automations`, {
            name: form.name ?? '',
            prompt: form.prompt ?? '',
            triggers: [{ provider: 'webhook', event: 'received', filter }],
          });
        } catch (err) {
          if (err instanceof SyntaxError) error = `The payload filter is not JSON: ${err.message}`;
          else if (err instanceof ApiProblem && err.status < 500)
            error = `The automation was not created: ${err.detail}`;
          else throw err;
        }
        if (!error) return reply.redirect(backToFactory(id), 303);
        return sendPage(reply, factoryPage(s.viewer, { ...(await factoryData(s, id)), error }), 422);
      }),
    );

    scope.post(
      '/console/factories/:id/runs',
      changing<{ id: string }>(async (s, form, request, reply) => {
        const id = request.params.id;
        let error: string;
        if (!form.prompt?.trim()) error = 'The run was not started: write a prompt.';
        else {
          try {
            const run = await s.api.call<{ run_id: string }>('POST', `/factories/${enc(id)}/runs`, {
              prompt: form.prompt,
              ...(form.title?.trim() ? { title: form.title.trim() } : {}),
            });
            return reply.redirect(`/console/runs/${enc(run.run_id)}?done=started`, 303);
          } catch (err) {
            if (!(err instanceof ApiProblem) || err.status >= 500 || err.status === 404) throw err;
            error = `The run was not started: ${err.detail}`;
          }
        }
        return sendPage(reply, factoryPage(s.viewer, { ...(await factoryData(s, id)), error }), 422);
      }),
    );

    const automationAction = (act: (s: Signed, id: string, form: Form) => Promise<unknown>) =>
      changing<{ id: string }>(async (s, form, request, reply) => {
        const id = request.params.id;
        const automation = await s.api.get<Automation & { factory_id: string }>(`/automations/${enc(id)}`);
        try {
          await act(s, id, form);
        } catch (err) {
          if (!(err instanceof ApiProblem) || err.status >= 500) throw err;
          const data = await factoryData(s, automation.factory_id);
          return sendPage(reply, factoryPage(s.viewer, { ...data, error: err.detail }), 422);
        }
        return reply.redirect(backToFactory(automation.factory_id), 303);
      });

    scope.post(
      '/console/automations/:id',
      automationAction((s, id, form) =>
        s.api.call('PATCH', `/automations/${enc(id)}`, { prompt: form.prompt ?? '', enabled: form.enabled === 'true' }),
      ),
    );
    scope.post(
      '/console/automations/:id/delete',
      automationAction((s, id) => s.api.call('DELETE', `/automations/${enc(id)}`)),
    );

    const webhookAction = (act: (s: Signed, uid: string, hook: Webhook) => Promise<unknown>) =>
      changing<{ uid: string }>(async (s, _form, request, reply) => {
        const uid = request.params.uid;
        const hook = await s.api.get<Webhook>(`/webhooks/${enc(uid)}`);
        let error: string | undefined;
        let created: CreatedWebhook | undefined;
        try {
          const answer = await act(s, uid, hook);
          if (answer && typeof answer === 'object' && 'secret' in answer) created = answer as CreatedWebhook;
        } catch (err) {
          if (!(err instanceof ApiProblem) || err.status >= 500) throw err;
          error = err.detail;
        }
        if (!hook.factory_id) return reply.redirect('/', 303);
        const data = await factoryData(s, hook.factory_id);
        if (!error && !created) return reply.redirect(backToFactory(hook.factory_id), 303);
        return sendPage(
          reply,
          factoryPage(s.viewer, {
            ...data,
            ...(created ? { created, rotated: request.url.endsWith('/rotate') } : {}),
            ...(error ? { error } : {}),
          }),
          error ? 422 : 200,
        );
      });

    const webhookConfirm = (make: (hook: Webhook) => Parameters<typeof confirmPage>[1]) =>
      viewing<{ uid: string }>(async (s, request, reply) => {
        const hook = await s.api.get<Webhook>(`/webhooks/${enc(request.params.uid)}`);
        return sendPage(reply, confirmPage(s.viewer, make(hook)));
      });
    const hookBack = (hook: Webhook) => ({
      back: hook.factory_id ? backToFactory(hook.factory_id) : '/',
      backLabel: 'Keep it as it is',
    });
    scope.get(
      '/console/webhooks/:uid/rotate',
      webhookConfirm((hook) => ({
        title: `Rotate the secret of webhook ${hook.name}?`,
        explanation:
          'A new secret is made and shown once; the current one is refused from then on, so every sender must be given the new one.',
        action: `/console/webhooks/${enc(hook.uid)}/rotate`,
        button: 'Rotate secret',
        ...hookBack(hook),
      })),
    );
    scope.get(
      '/console/webhooks/:uid/toggle',
      webhookConfirm((hook) => ({
        title: hook.enabled ? `Disable webhook ${hook.name}?` : `Enable webhook ${hook.name}?`,
        explanation: hook.enabled
          ? 'Senders get 404 at once and nothing is logged; the delivery history and the automations stay. Enable it again to resume.'
          : 'Deliveries are accepted again.',
        action: `/console/webhooks/${enc(hook.uid)}/toggle`,
        button: hook.enabled ? 'Disable webhook' : 'Enable webhook',
        ...hookBack(hook),
      })),
    );

    scope.post(
      '/console/webhooks/:uid/toggle',
      webhookAction((s, uid, hook) => s.api.call('PATCH', `/webhooks/${enc(uid)}`, { enabled: !hook.enabled })),
    );
    scope.post(
      '/console/webhooks/:uid/rotate',
      webhookAction((s, uid) => s.api.call('POST', `/webhooks/${enc(uid)}/rotate-secret`, {})),
    );
    scope.post(
      '/console/webhooks/:uid/delete',
      webhookAction((s, uid) => s.api.call('DELETE', `/webhooks/${enc(uid)}`)),
    );

    const webhookData = async (s: Signed, uid: string, cursor?: string) => {
      const [webhook, deliveries, lockouts] = await Promise.all([
        s.api.get<Webhook>(`/webhooks/${enc(uid)}`),
        s.api.get<{ deliveries: Delivery[]; page_info: PageInfo }>(`/webhooks/${enc(uid)}/deliveries`, {
          limit: '50',
          cursor,
        }),
        s.api.get<{ lockouts: Lockout[] }>(`/webhooks/${enc(uid)}/lockouts`),
      ]);
      const factoryId = webhook.factory_id;
      const [factory, automations] = factoryId
        ? await lookups.get(s.session.csrf, `factory:${factoryId}`, () =>
            Promise.all([
              s.api.get<Factory>(`/factories/${enc(factoryId)}`).catch(() => undefined),
              s.api.get<{ automations: Automation[] }>(`/factories/${enc(factoryId)}/automations`),
            ]),
          )
        : [undefined, { automations: [] }];
      return {
        webhook,
        factoryName: factory?.name,
        deliveries: deliveries.deliveries,
        pageInfo: deliveries.page_info,
        lockouts: lockouts.lockouts,
        automations: automations.automations,
        ...(cursor ? { older: true } : {}),
      };
    };

    scope.get(
      '/console/webhooks/:uid',
      viewing<{ uid: string }>(async (s, request, reply) =>
        sendPage(reply, webhookPage(s.viewer, await webhookData(s, request.params.uid, request.query.cursor))),
      ),
    );

    // The delivery log's newest rows, for console.js to refresh the table in place.
    scope.get(
      '/console/webhooks/:uid/deliveries.html',
      viewing<{ uid: string }>(async (s, request, reply) => {
        const uid = request.params.uid;
        const list = await s.api.get<{ deliveries: Delivery[] }>(`/webhooks/${enc(uid)}/deliveries`, { limit: '50' });
        return reply
          .type('text/html; charset=utf-8')
          .send(list.deliveries.map((d) => deliveryRow(uid, d).text).join(''));
      }),
    );

    scope.get(
      '/console/webhooks/:uid/deliveries/:did',
      viewing<{ uid: string; did: string }>(async (s, request, reply) => {
        const { uid, did } = request.params;
        const [webhook, delivery] = await Promise.all([
          s.api.get<Webhook>(`/webhooks/${enc(uid)}`),
          s.api.get<DeliveryDetail>(`/webhooks/${enc(uid)}/deliveries/${enc(did)}`),
        ]);
        const stored = delivery.status === 'accepted' || delivery.status === 'duplicate';
        const automations = webhook.factory_id
          ? (
              await s.api
                .get<{ automations: (Automation & { webhook_triggers?: { webhook_uid: string }[] })[] }>(
                  `/factories/${enc(webhook.factory_id)}/automations`,
                )
                .catch(() => ({ automations: [] }))
            ).automations.filter((a) => a.webhook_triggers?.some((t) => t.webhook_uid === webhook.uid) ?? true)
          : [];
        const [raw, evaluations, runs] = await Promise.all([
          delivery.status === 'accepted' ? rawPayload(s, uid, did) : undefined,
          Promise.all(
            automations.map(async (automation) => {
              if (!stored) return { automation };
              try {
                const result = await s.api.call<TestFilterResult>(
                  'POST',
                  `/automations/${enc(automation.id)}/test-filter`,
                  { delivery_id: did },
                );
                return { automation, result };
              } catch (err) {
                if (!(err instanceof ApiProblem) || err.status >= 500) throw err;
                return { automation, error: err.detail };
              }
            }),
          ),
          deliveryRuns(s.api, delivery.runs ?? []),
        ]);
        const notice = request.query.done === 'replay' ? REPLAY_NOTICE : undefined;
        const error = REPLAY_FAILURES[request.query.failed ?? ''];
        return sendPage(
          reply,
          deliveryPage(s.viewer, {
            webhook,
            delivery,
            payload: raw,
            evaluations,
            runs,
            ...(notice ? { notice } : {}),
            ...(error ? { error } : {}),
          }),
        );
      }),
    );

    const deliveryUrl = (uid: string, did: string) => `/console/webhooks/${enc(uid)}/deliveries/${enc(did)}`;
    scope.get(
      '/console/webhooks/:uid/deliveries/:did/replay',
      viewing<{ uid: string; did: string }>(async (s, request, reply) => {
        const { uid, did } = request.params;
        const delivery = await s.api.get<DeliveryDetail>(`/webhooks/${enc(uid)}/deliveries/${enc(did)}`);
        return sendPage(
          reply,
          confirmPage(s.viewer, {
            title: `Replay delivery ${delivery.delivery_id}?`,
            explanation:
              'Its payload is evaluated again against the automations as they are now, as a new delivery that names this one: every automation it matches starts a run, even one that already ran for this delivery.',
            action: `${deliveryUrl(uid, did)}/replay`,
            button: 'Replay delivery',
            back: deliveryUrl(uid, did),
            backLabel: 'Do not replay',
          }),
        );
      }),
    );
    // POST, then a redirect to the replay's page: a reload shows the page and posts nothing again.
    scope.post(
      '/console/webhooks/:uid/deliveries/:did/replay',
      changing<{ uid: string; did: string }>(async (s, _form, request, reply) => {
        const { uid, did } = request.params;
        try {
          const replay = await s.api.call<{ delivery_id: string }>(
            'POST',
            `/webhooks/${enc(uid)}/deliveries/${enc(did)}/replay`,
          );
          return reply.redirect(`${deliveryUrl(uid, replay.delivery_id)}?done=replay`, 303);
        } catch (err) {
          if (!(err instanceof ApiProblem) || err.status >= 500 || err.status === 404) throw err;
          return reply.redirect(
            `${deliveryUrl(uid, did)}?failed=${err.status === 403 ? 'replay-denied' : 'replay-refused'}`,
            303,
          );
        }
      }),
    );

    const rawPayload = async (s: Signed, uid: string, did: string): Promise<string | undefined> => {
      const res = await root.inject({
        method: 'GET',
        url: `/api/v1/webhooks/${enc(uid)}/deliveries/${enc(did)}/payload`,
        headers: { authorization: `Bearer ${s.session.key}` },
      });
      return res.statusCode === 200 ? res.body : undefined;
    };

    scope.post(
      '/console/webhooks/:uid/test-filter',
      changing<{ uid: string }>(async (s, form, request, reply) => {
        const data = await webhookData(s, request.params.uid);
        const automation = form.automation ?? '';
        const delivery = (form.delivery ?? '').trim();
        let result: TestFilterResult | undefined;
        let error: string | undefined;
        try {
          result = await s.api.call<TestFilterResult>('POST', `/automations/${enc(automation)}/test-filter`, {
            delivery_id: delivery,
          });
        } catch (err) {
          if (!(err instanceof ApiProblem) || err.status >= 500) throw err;
          error = err.detail;
        }
        return sendPage(
          reply,
          webhookPage(s.viewer, {
            ...data,
            test: { automation, delivery, ...(result ? { result } : {}), ...(error ? { error } : {}) },
          }),
        );
      }),
    );

    scope.get(
      '/console/runs',
      viewing<Record<string, never>>(async (s, request, reply) => {
        const filters: RunFilters = {};
        for (const key of RUN_FILTERS) {
          const value = request.query[key];
          if (typeof value === 'string' && value.trim() !== '') filters[key] = value.trim();
        }
        const by = request.query.sort_by;
        const sort: RunSort = {
          by: by === 'title' || by === 'updated_at' ? by : 'created_at',
          order: request.query.sort_order === 'asc' ? 'asc' : 'desc',
        };
        const asked = Number(request.query.limit);
        const limit = Number.isInteger(asked) && asked >= 1 && asked <= 100 ? asked : 25;
        const params = new URLSearchParams(request.url.split('?')[1] ?? '');
        const back = params.getAll('back').slice(-20);
        const cursor =
          typeof request.query.cursor === 'string' && request.query.cursor ? request.query.cursor : undefined;
        const [factories, runs] = await Promise.all([
          lookups.get(s.session.csrf, 'factories', () =>
            s.api.get<{ factories: Factory[] }>('/factories', { limit: '100' }),
          ),
          s.api
            .get<{ runs: Run[]; page_info: PageInfo }>('/agent/runs', {
              ...filters,
              sort_by: sort.by,
              sort_order: sort.order,
              limit: String(limit),
              cursor,
            })
            .catch((err: unknown) => {
              if (err instanceof ApiProblem && err.status < 500) return err;
              throw err;
            }),
        ]);
        const base = { filters, sort, limit, back, ...(cursor ? { cursor } : {}), factories: factories.factories };
        if (runs instanceof ApiProblem) {
          return sendPage(
            reply,
            runsPage(s.viewer, { ...base, runs: [], pageInfo: { has_next_page: false }, error: runs.detail }),
            runs.status,
          );
        }
        return sendPage(reply, runsPage(s.viewer, { ...base, runs: runs.runs, pageInfo: runs.page_info }));
      }),
    );

    const kit: ConsoleKit = {
      root,
      lookups,
      transcript: options.transcript,
      csp: PAGE_CSP,
      sendPage,
      viewing,
      changing,
    };
    registerRunRoutes(scope, kit);

    registerSettingsRoutes(scope, kit);
    registerProviderDeliveryRoutes(scope, kit);
  });
}
