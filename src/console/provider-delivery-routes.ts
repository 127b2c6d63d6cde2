/**
 * A provider connection's delivery log and each delivery's page (GitHub, Slack, Linear): why it was refused,
 * the automations with a trigger of the provider tested against it now, the runs it started, and a replay.
 * Each reads the JSON API with the signed-in key, like every console page.
 */
import type { FastifyInstance } from 'fastify';
import { deliveryRuns } from './delivery-runs.ts';
import { ApiProblem, enc } from './api.ts';
import type { PageInfo } from './api-types.ts';
import { confirmPage } from './layout.ts';
import { providerDeliveriesPage, providerDeliveryPage, providerDeliveryUrl } from './pages/provider-deliveries.ts';
import type { ProviderDelivery, ProviderDeliveryDetail, ProviderEvaluation } from './pages/provider-deliveries.ts';
import type { Lockout } from './pages/webhook.ts';
import { isProvider } from './settings-routes.ts';
import type { ConsoleKit } from './shared-routes.ts';

const REPLAY_NOTICE = 'This is a replay: it is evaluated against the current automations like any delivery.';
const REPLAY_FAILURES: Record<string, string> = {
  'replay-denied': 'Only a team admin may replay a delivery.',
  'replay-refused': 'Only an accepted delivery, with its payload, can be replayed.',
};

const unknownProvider = (provider: string) =>
  new ApiProblem(404, 'resource_not_found', `no provider ${provider}: use github, slack or linear`);

export function registerProviderDeliveryRoutes(scope: FastifyInstance, kit: ConsoleKit): void {
  const { viewing, changing, sendPage } = kit;

  scope.get(
    '/console/integrations/:provider/deliveries',
    viewing<{ provider: string }>(async (s, request, reply) => {
      const provider = request.params.provider;
      if (!isProvider(provider)) throw unknownProvider(provider);
      const cursor = request.query.cursor || undefined;
      const [list, lockouts] = await Promise.all([
        s.api.get<{ deliveries: ProviderDelivery[]; page_info: PageInfo }>(`/integrations/${provider}/deliveries`, {
          limit: '50',
          cursor,
        }),
        s.api.get<{ lockouts: Lockout[] }>(`/integrations/${provider}/lockouts`),
      ]);
      return sendPage(
        reply,
        providerDeliveriesPage(s.viewer, {
          provider,
          deliveries: list.deliveries,
          pageInfo: list.page_info,
          older: cursor !== undefined,
          lockouts: lockouts.lockouts,
        }),
      );
    }),
  );

  scope.get(
    '/console/integrations/:provider/deliveries/:did',
    viewing<{ provider: string; did: string }>(async (s, request, reply) => {
      const { provider, did } = request.params;
      if (!isProvider(provider)) throw unknownProvider(provider);
      const delivery = await s.api.get<ProviderDeliveryDetail>(`/integrations/${provider}/deliveries/${enc(did)}`);
      const stored = delivery.status === 'accepted' || delivery.status === 'duplicate';
      const [test, runs] = await Promise.all([
        stored
          ? s.api
              .get<{ events: string[]; automations: ProviderEvaluation[] }>(
                `/integrations/${provider}/deliveries/${enc(did)}/automations`,
              )
              .catch((err: unknown) => {
                if (err instanceof ApiProblem && err.status < 500 && err.status !== 401) return err;
                throw err;
              })
          : undefined,
        deliveryRuns(s.api, delivery.runs),
      ]);
      const notice = request.query.done === 'replay' ? REPLAY_NOTICE : undefined;
      const error = REPLAY_FAILURES[request.query.failed ?? ''];
      return sendPage(
        reply,
        providerDeliveryPage(s.viewer, {
          provider,
          delivery,
          runs,
          ...(test instanceof ApiProblem ? { testError: test.detail } : test ? { test } : {}),
          ...(notice ? { notice } : {}),
          ...(error ? { error } : {}),
        }),
      );
    }),
  );

  scope.get(
    '/console/integrations/:provider/deliveries/:did/replay',
    viewing<{ provider: string; did: string }>(async (s, request, reply) => {
      const { provider, did } = request.params;
      if (!isProvider(provider)) throw unknownProvider(provider);
      const delivery = await s.api.get<ProviderDeliveryDetail>(`/integrations/${provider}/deliveries/${enc(did)}`);
      const back = providerDeliveryUrl(provider, delivery.delivery_id);
      return sendPage(
        reply,
        confirmPage(s.viewer, {
          title: `Replay delivery ${delivery.delivery_id}?`,
          explanation:
            "The provider's event is evaluated again against the automations as they are now, as a new delivery that names this one: every automation whose trigger it matches starts a run, even one that already ran for this event, and a message in a run's thread is that run's follow-up again.",
          action: `${back}/replay`,
          button: 'Replay delivery',
          back,
          backLabel: 'Do not replay',
        }),
      );
    }),
  );

  // POST, then a redirect to the replay's page: a reload shows the page and posts nothing again.
  scope.post(
    '/console/integrations/:provider/deliveries/:did/replay',
    changing<{ provider: string; did: string }>(async (s, _form, request, reply) => {
      const { provider, did } = request.params;
      if (!isProvider(provider)) throw unknownProvider(provider);
      try {
        const replay = await s.api.call<{ delivery_id: string }>(
          'POST',
          `/integrations/${provider}/deliveries/${enc(did)}/replay`,
        );
        return reply.redirect(`${providerDeliveryUrl(provider, replay.delivery_id)}?done=replay`, 303);
      } catch (err) {
        if (!(err instanceof ApiProblem) || err.status >= 500 || err.status === 404) throw err;
        return reply.redirect(
          `${providerDeliveryUrl(provider, did)}?failed=${err.status === 403 ? 'replay-denied' : 'replay-refused'}`,
          303,
        );
      }
    }),
  );
}
