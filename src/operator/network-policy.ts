/**
 * The NetworkPolicy of a run's Job, rendered from its runner's egress policy (`network`, docs/governance.md).
 * A NetworkPolicy selects addresses, not names, so it enforces the address part of the policy: `network: none`
 * lets the pod reach nothing; otherwise the pod reaches cluster DNS and public addresses only (loopback,
 * private, link-local/metadata, shared and multicast ranges excepted), plus the server's own address when its
 * public URL names an IP. A `network.allow` list of names needs an FQDN-aware plugin or egress gateway on top:
 * the policy here still keeps such a pod off private and metadata addresses.
 */
import type { V1NetworkPolicy, V1NetworkPolicyEgressRule } from '@kubernetes/client-node';
import ipaddr from 'ipaddr.js';
import type { RunnerDefinition } from '../definitions/model.ts';
import { RUN_ID_LABEL } from './job-spec.ts';

/** IPv4 and IPv6 space a Job's pod may not reach (the proxy's refusals, as CIDRs). */
const EXCEPT_V4 = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.0.0.0/24',
  '192.168.0.0/16',
  '198.18.0.0/15',
  '224.0.0.0/4',
  '240.0.0.0/4',
];
// (the API server refuses IPv4-mapped ranges here; a pod's IPv4 traffic is judged by the IPv4 block)
const EXCEPT_V6 = ['::1/128', 'fc00::/7', 'fe80::/10', 'ff00::/8', '64:ff9b::/96', '2002::/16'];

export interface NetworkPolicyInput {
  jobName: string;
  namespace: string;
  runId: string;
  /** The Job that owns the policy (deleted with it). */
  job: { name: string; uid: string };
  runner: Pick<RunnerDefinition, 'network'> | undefined;
  /** The server's public URL (its factory interface), reachable whatever the policy when it names an IP. */
  serverUrl: string | undefined;
}

function serverRule(serverUrl: string | undefined): V1NetworkPolicyEgressRule[] {
  if (!serverUrl) return [];
  try {
    const url = new URL(serverUrl);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (!ipaddr.isValid(host)) return [];
    const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
    const bits = ipaddr.parse(host).kind() === 'ipv6' ? 128 : 32;
    return [{ to: [{ ipBlock: { cidr: `${host}/${bits}` } }], ports: [{ protocol: 'TCP', port }] }];
  } catch {
    return [];
  }
}

export function buildNetworkPolicy(input: NetworkPolicyInput): V1NetworkPolicy {
  const none = input.runner?.network === 'none';
  const egress: V1NetworkPolicyEgressRule[] = none
    ? []
    : [
        {
          // cluster DNS, wherever it runs
          to: [{ namespaceSelector: {}, podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } } }],
          ports: [
            { protocol: 'UDP', port: 53 },
            { protocol: 'TCP', port: 53 },
          ],
        },
        {
          to: [{ ipBlock: { cidr: '0.0.0.0/0', except: EXCEPT_V4 } }, { ipBlock: { cidr: '::/0', except: EXCEPT_V6 } }],
        },
        ...serverRule(input.serverUrl),
      ];
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: {
      name: input.jobName,
      namespace: input.namespace,
      labels: { [RUN_ID_LABEL]: input.runId, 'app.kubernetes.io/managed-by': 'agentyard' },
      ownerReferences: [
        {
          apiVersion: 'batch/v1',
          kind: 'Job',
          name: input.job.name,
          uid: input.job.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      podSelector: { matchLabels: { [RUN_ID_LABEL]: input.runId } },
      policyTypes: ['Egress'],
      egress,
    },
  };
}
