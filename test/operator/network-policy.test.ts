/**
 * The NetworkPolicy rendered for a run's Job from its runner's egress policy: `none` denies all egress; the
 * default and `allow` lists keep the pod to DNS and public addresses; the server's address is reachable when
 * its URL names an IP.
 */
import { describe, expect, it } from 'vitest';
import { buildNetworkPolicy } from '../../src/operator/network-policy.ts';
import { RUN_ID_LABEL } from '../../src/operator/job-spec.ts';

const base = {
  jobName: 'run-abc',
  namespace: 'team-a',
  runId: 'abc',
  job: { name: 'run-abc', uid: 'uid-1' },
  serverUrl: 'http://10.0.0.5:8080',
};

describe('NetworkPolicy of a run', () => {
  it('denies all egress for network: none, owned by the Job and selecting its pod', () => {
    const p = buildNetworkPolicy({ ...base, runner: { network: 'none' } });
    expect(p.spec).toEqual({
      podSelector: { matchLabels: { [RUN_ID_LABEL]: 'abc' } },
      policyTypes: ['Egress'],
      egress: [],
    });
    expect(p.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'Job', uid: 'uid-1', controller: true });
  });

  it('allows DNS, public addresses and the server, never private or metadata space', () => {
    for (const runner of [undefined, { network: { allow: ['github.com'] } }]) {
      const p = buildNetworkPolicy({ ...base, runner });
      const egress = p.spec!.egress!;
      expect(egress[0]!.ports).toEqual(expect.arrayContaining([{ protocol: 'UDP', port: 53 }]));
      const v4 = egress[1]!.to!.find((t) => t.ipBlock?.cidr === '0.0.0.0/0')!.ipBlock!;
      expect(v4.except).toEqual(
        expect.arrayContaining(['127.0.0.0/8', '10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16']),
      );
      const v6 = egress[1]!.to!.find((t) => t.ipBlock?.cidr === '::/0')!.ipBlock!;
      expect(v6.except).toEqual(expect.arrayContaining(['::1/128', 'fc00::/7', 'fe80::/10']));
      expect(egress[2]).toEqual({
        to: [{ ipBlock: { cidr: '10.0.0.5/32' } }],
        ports: [{ protocol: 'TCP', port: 8080 }],
      });
    }
    expect(
      buildNetworkPolicy({ ...base, serverUrl: 'https://agentyard.example', runner: undefined }).spec!.egress,
    ).toHaveLength(2);
  });
});
