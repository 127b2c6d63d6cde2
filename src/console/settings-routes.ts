/**
 * The team's settings in the console: schedules, integrations, secrets and API keys. Each change is one call
 * of the JSON API with the signed-in key; a change that worked redirects (a reload posts nothing again), one
 * the API refused shows the page again with its reason.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { ApiProblem, enc } from './api.ts';
import type { Connection, Schedule } from './api-types.ts';
import { confirmPage } from './layout.ts';
import type { ApiKeyItem } from './pages/api-keys.ts';
import { apiKeysPage } from './pages/api-keys.ts';
import { CONNECT_FIELDS, integrationsPage, PROVIDERS } from './pages/integrations.ts';
import type { ProviderName } from './pages/integrations.ts';
import { schedulesPage } from './pages/schedules.ts';
import { secretsPage } from './pages/secrets.ts';
import type { SecretItem } from './pages/secrets.ts';
import type { ConsoleKit, Form, Signed } from './shared-routes.ts';

/** What a redirect may say (`?done=`): codes, never free text from the address. */
const DONE: Record<string, string> = {
  'schedule-created': 'Schedule created.',
  'schedule-saved': 'Schedule saved.',
  'schedule-deleted': 'Schedule deleted. The runs it started stay.',
  connected: 'Connection saved.',
  disconnected: 'Disconnected: provider events are refused from now on.',
  'secret-set': 'Secret set. Its value is not shown.',
  'secret-deleted': 'Secret deleted.',
  'key-revoked': 'Key revoked: it stops working at once.',
};

/** The API refused: its reason, for the page shown again. Anything else is not the form's fault. */
async function refusal(act: () => Promise<unknown>): Promise<string | undefined> {
  try {
    await act();
    return undefined;
  } catch (err) {
    if (err instanceof ApiProblem && err.status < 500 && err.status !== 401) return err.detail;
    throw err;
  }
}

export function isProvider(p: string): p is ProviderName {
  return (PROVIDERS as readonly string[]).includes(p);
}

export function registerSettingsRoutes(scope: FastifyInstance, kit: ConsoleKit): void {
  const { viewing, changing, sendPage } = kit;
  const done = (query: Record<string, string>) => DONE[query.done ?? ''];

  // Schedules
  const schedules = async (s: Signed, reply: FastifyReply, message: { notice?: string; error?: string }) => {
    const list = await s.api.get<{ schedules: Schedule[] }>('/agent/schedules');
    return sendPage(
      reply,
      schedulesPage(s.viewer, { schedules: list.schedules, ...message }),
      message.error ? 422 : 200,
    );
  };
  const scheduleBody = (form: Form, previous?: Schedule) => ({
    name: (form.name ?? '').trim(),
    cron_schedule: (form.cron_schedule ?? '').trim(),
    prompt: form.prompt ?? '',
    enabled: form.enabled === 'true',
    // PUT replaces the whole schedule: what the form does not show is sent back as it was.
    ...(previous?.agent_config ? { agent_config: previous.agent_config } : {}),
    ...(previous?.metadata ? { metadata: previous.metadata } : {}),
  });
  scope.get(
    '/console/schedules',
    viewing<Record<string, never>>(async (s, request, reply) => {
      const notice = done(request.query);
      return schedules(s, reply, notice ? { notice } : {});
    }),
  );
  scope.post(
    '/console/schedules',
    changing(async (s, form, _request, reply) => {
      const error = await refusal(() => s.api.call('POST', '/agent/schedules', scheduleBody(form)));
      if (error) return schedules(s, reply, { error: `The schedule was not created: ${error}` });
      return reply.redirect('/console/schedules?done=schedule-created', 303);
    }),
  );
  scope.post(
    '/console/schedules/:id',
    changing<{ id: string }>(async (s, form, request, reply) => {
      const id = request.params.id;
      const previous = await s.api.get<Schedule>(`/agent/schedules/${enc(id)}`);
      const error = await refusal(() => s.api.call('PUT', `/agent/schedules/${enc(id)}`, scheduleBody(form, previous)));
      if (error) return schedules(s, reply, { error: `The schedule was not saved: ${error}` });
      return reply.redirect(`/console/schedules?done=schedule-saved#schedule-${enc(id)}`, 303);
    }),
  );
  scope.get(
    '/console/schedules/:id/delete',
    viewing<{ id: string }>(async (s, request, reply) => {
      const schedule = await s.api.get<Schedule>(`/agent/schedules/${enc(request.params.id)}`);
      return sendPage(
        reply,
        confirmPage(s.viewer, {
          title: `Delete schedule ${schedule.name}?`,
          explanation: 'It fires no more. The runs it started stay.',
          action: `/console/schedules/${enc(schedule.id)}/delete`,
          button: 'Delete schedule',
          back: '/console/schedules',
          backLabel: 'Keep it',
        }),
      );
    }),
  );
  scope.post(
    '/console/schedules/:id/delete',
    changing<{ id: string }>(async (s, _form, request, reply) => {
      const error = await refusal(() => s.api.call('DELETE', `/agent/schedules/${enc(request.params.id)}`));
      if (error) return schedules(s, reply, { error: `The schedule was not deleted: ${error}` });
      return reply.redirect('/console/schedules?done=schedule-deleted', 303);
    }),
  );

  // Integrations
  const integrations = async (s: Signed, reply: FastifyReply, message: { notice?: string; error?: string }) => {
    const list = await s.api.get<{ integrations: Connection[] }>('/integrations');
    return sendPage(reply, integrationsPage(s.viewer, list.integrations, message), message.error ? 422 : 200);
  };
  scope.get(
    '/console/integrations',
    viewing<Record<string, never>>(async (s, request, reply) => {
      const notice = done(request.query);
      return integrations(s, reply, notice ? { notice } : {});
    }),
  );
  scope.post(
    '/console/integrations/:provider',
    changing<{ provider: string }>(async (s, form, request, reply) => {
      const provider = request.params.provider;
      if (!isProvider(provider)) throw new ApiProblem(404, 'resource_not_found', `no provider ${provider}`);
      const body: Record<string, string> = {};
      if (provider === 'github') body.mode = form.mode === 'app' ? 'app' : 'webhook';
      for (const [name] of CONNECT_FIELDS[provider]) if (form[name]?.trim()) body[name] = form[name].trim();
      const error = await refusal(() => s.api.call('PUT', `/integrations/${provider}`, body));
      if (error) return integrations(s, reply, { error: `The connection was not saved: ${error}` });
      return reply.redirect('/console/integrations?done=connected', 303);
    }),
  );
  scope.get(
    '/console/integrations/:provider/disconnect',
    viewing<{ provider: string }>(async (s, request, reply) => {
      const provider = request.params.provider;
      if (!isProvider(provider)) throw new ApiProblem(404, 'resource_not_found', `no provider ${provider}`);
      return sendPage(
        reply,
        confirmPage(s.viewer, {
          title: `Disconnect ${provider}?`,
          explanation:
            'Its events are refused from then on and its triggers start nothing; the secrets it names stay. Connect it again to resume.',
          action: `/console/integrations/${provider}/disconnect`,
          button: 'Disconnect',
          back: '/console/integrations',
          backLabel: 'Keep it connected',
        }),
      );
    }),
  );
  scope.post(
    '/console/integrations/:provider/disconnect',
    changing<{ provider: string }>(async (s, _form, request, reply) => {
      const provider = request.params.provider;
      if (!isProvider(provider)) throw new ApiProblem(404, 'resource_not_found', `no provider ${provider}`);
      const error = await refusal(() => s.api.call('DELETE', `/integrations/${provider}`));
      if (error) return integrations(s, reply, { error: `Not disconnected: ${error}` });
      return reply.redirect('/console/integrations?done=disconnected', 303);
    }),
  );

  // Secrets: values go to the API and never come back.
  const secrets = async (s: Signed, reply: FastifyReply, message: { notice?: string; error?: string }) => {
    const list = await s.api.get<{ secrets: SecretItem[] }>('/secrets');
    return sendPage(reply, secretsPage(s.viewer, { secrets: list.secrets, ...message }), message.error ? 422 : 200);
  };
  scope.get(
    '/console/secrets',
    viewing<Record<string, never>>(async (s, request, reply) => {
      const notice = done(request.query);
      return secrets(s, reply, notice ? { notice } : {});
    }),
  );
  scope.post(
    '/console/secrets',
    changing(async (s, form, _request, reply) => {
      const name = (form.name ?? '').trim();
      const error = !name
        ? 'write a name'
        : await refusal(() => s.api.call('PUT', `/secrets/${enc(name)}`, { value: form.value ?? '' }));
      if (error) return secrets(s, reply, { error: `The secret was not set: ${error}` });
      return reply.redirect('/console/secrets?done=secret-set', 303);
    }),
  );
  scope.get(
    '/console/secrets/:name/delete',
    viewing<{ name: string }>(async (s, request, reply) => {
      const secret = await s.api.get<SecretItem>(`/secrets/${enc(request.params.name)}`);
      return sendPage(
        reply,
        confirmPage(s.viewer, {
          title: `Delete secret ${secret.name}?`,
          explanation:
            'Webhooks, connections and runs that name it can no longer use it. Its value cannot be recovered.',
          action: `/console/secrets/${enc(secret.name)}/delete`,
          button: 'Delete secret',
          back: '/console/secrets',
          backLabel: 'Keep it',
        }),
      );
    }),
  );
  scope.post(
    '/console/secrets/:name/delete',
    changing<{ name: string }>(async (s, _form, request, reply) => {
      const error = await refusal(() => s.api.call('DELETE', `/secrets/${enc(request.params.name)}`));
      if (error) return secrets(s, reply, { error: `The secret was not deleted: ${error}` });
      return reply.redirect('/console/secrets?done=secret-deleted', 303);
    }),
  );

  // API keys: a new key is shown once, in the answer to the form (never in an address).
  const keys = async (
    s: Signed,
    reply: FastifyReply,
    message: { notice?: string; error?: string; created?: { name: string; key: string } },
    status = 200,
  ) => {
    const list = await s.api.get<{ api_keys: ApiKeyItem[] }>('/api-keys');
    return sendPage(reply, apiKeysPage(s.viewer, { keys: list.api_keys, ...message }), status);
  };
  scope.get(
    '/console/api-keys',
    viewing<Record<string, never>>(async (s, request, reply) => {
      const notice = done(request.query);
      return keys(s, reply, notice ? { notice } : {});
    }),
  );
  scope.post(
    '/console/api-keys',
    changing(async (s, form, _request, reply) => {
      const expires = form.expires_at?.trim();
      if (expires && !/^\d{4}-\d{2}-\d{2}$/.test(expires))
        return keys(s, reply, { error: 'The key was not created: the expiry must be a date (YYYY-MM-DD).' }, 422);
      let created: { key: string; name: string } | undefined;
      const error = await refusal(async () => {
        created = await s.api.call<{ key: string; name: string }>('POST', '/api-keys', {
          name: (form.name ?? '').trim(),
          role: form.role === 'admin' ? 'admin' : 'member',
          ...(expires ? { expires_at: `${expires}T00:00:00Z` } : {}),
        });
      });
      if (error || !created) return keys(s, reply, { error: `The key was not created: ${error}` }, 422);
      return keys(s, reply, { created: { name: created.name, key: created.key } }, 201);
    }),
  );
  scope.get(
    '/console/api-keys/:id/revoke',
    viewing<{ id: string }>(async (s, request, reply) => {
      const list = await s.api.get<{ api_keys: ApiKeyItem[] }>('/api-keys');
      const key = list.api_keys.find((k) => k.id === request.params.id);
      if (!key) throw new ApiProblem(404, 'resource_not_found', `no API key ${request.params.id}`);
      return sendPage(
        reply,
        confirmPage(s.viewer, {
          title: `Revoke key ${key.name} (${key.prefix}…)?`,
          explanation:
            'It stops working at once, on every process; console sessions signed in with it end too. This cannot be undone.',
          action: `/console/api-keys/${enc(key.id)}/revoke`,
          button: 'Revoke key',
          back: '/console/api-keys',
          backLabel: 'Keep it',
        }),
      );
    }),
  );
  scope.post(
    '/console/api-keys/:id/revoke',
    changing<{ id: string }>(async (s, _form, request, reply) => {
      const error = await refusal(() => s.api.call('DELETE', `/api-keys/${enc(request.params.id)}`));
      if (error) return keys(s, reply, { error: `The key was not revoked: ${error}` }, 422);
      return reply.redirect('/console/api-keys?done=key-revoked', 303);
    }),
  );
}
