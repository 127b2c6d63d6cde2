/**
 * Egress of a container run (no container engine runs on these machines: `docker` is installed, its daemon is
 * not). What is tested: the command line a run's container gets (`--network none`, the egress proxy's socket
 * directory and the relay's host files mounted read-only, the relay started before the agent, the proxy named in
 * the environment by name only); `ldd`'s answer for this host's socat; and the relay itself, for real: the very
 * script the container runs, with the relay's files mounted where the container has them, in a network namespace
 * of its own (bubblewrap `--unshare-net`), carries a client's request through the execution's egress proxy, and
 * a direct connection to the host's loopback fails. What is not: docker's or podman's own handling of these
 * arguments (docs/governance.md, "Egress").
 */
import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEgressProxy } from '../../src/execution/egress/proxy.ts';
import { networkPolicyFrom } from '../../src/execution/egress/policy.ts';
import type { EgressRecord } from '../../src/execution/egress/proxy.ts';
import { SANDBOX_PROXY_DIR } from '../../src/execution/sandbox/bubblewrap.ts';
import { containerArgs } from '../../src/execution/sandbox/container.ts';
import {
  containerRelayScript,
  parseLdd,
  RELAY_DIR,
  relayBinaries,
  relayVolumes,
} from '../../src/execution/sandbox/container-relay.ts';
import type { RelayBinaries } from '../../src/execution/sandbox/container-relay.ts';

const SOCAT = '/usr/bin/socat';
const BWRAP = '/usr/bin/bwrap';
const RELAY: RelayBinaries = {
  socat: '/usr/bin/socat',
  loader: '/lib64/ld-linux-x86-64.so.2',
  libraries: [
    { name: 'libssl.so.3', file: '/lib/x86_64-linux-gnu/libssl.so.3' },
    { name: 'libc.so.6', file: '/lib/x86_64-linux-gnu/libc.so.6' },
  ],
};
const spec = {
  runtime: 'docker',
  image: 'node:24-bookworm',
  name: 'agentyard-exe_1',
  command: 'claude',
  args: ['-p'],
  workspace: '/srv/ws/exe_1',
  configDir: '/srv/config/exe_1',
  envNames: ['HTTPS_PROXY', 'HTTP_PROXY'],
  uid: 1000,
  gid: 1000,
};

describe('a container run’s network', () => {
  it('has its own namespace whose way out is the proxy’s socket, relayed before the agent starts', () => {
    const args = containerArgs({ ...spec, network: { kind: 'proxy', socketDir: '/tmp/egress-1', relay: RELAY } });
    expect(args.slice(args.indexOf('--network'), args.indexOf('--network') + 2)).toEqual(['--network', 'none']);
    const volumes = args.flatMap((a, i) => (a === '--volume' ? [args[i + 1]] : []));
    expect(volumes).toEqual(
      expect.arrayContaining([
        `/tmp/egress-1:${SANDBOX_PROXY_DIR}:ro`,
        `/usr/bin/socat:${RELAY_DIR}/socat:ro`,
        `/lib64/ld-linux-x86-64.so.2:${RELAY_DIR}/ld.so:ro`,
        `/lib/x86_64-linux-gnu/libssl.so.3:${RELAY_DIR}/lib/libssl.so.3:ro`,
        `/lib/x86_64-linux-gnu/libc.so.6:${RELAY_DIR}/lib/libc.so.6:ro`,
      ]),
    );
    expect(args.slice(args.indexOf('--'))).toEqual([
      '--',
      'node:24-bookworm',
      '/bin/sh',
      '-c',
      containerRelayScript(),
      'agentyard-egress-relay',
      'claude',
      '-p',
    ]);
    // the proxy's address is passed by name; its value is in the client's environment
    expect(args.join(' ')).not.toMatch(/127\.0\.0\.1:3128/);
  });

  it('has no way out with `network: none`, and the runtime’s network without a policy (host network opt-out)', () => {
    const none = containerArgs({ ...spec, network: { kind: 'none' } });
    expect(none).toEqual(expect.arrayContaining(['--network', 'none']));
    expect(none.join(' ')).not.toContain(RELAY_DIR);
    expect(none.slice(none.indexOf('--'))).toEqual(['--', 'node:24-bookworm', 'claude', '-p']);
    expect(containerArgs(spec)).not.toContain('--network');
  });

  it('reads socat’s loader and libraries from ldd', async () => {
    const parsed = parseLdd(
      SOCAT,
      '\tlinux-vdso.so.1 (0x00007ffd)\n\tlibssl.so.3 => /lib/x86_64-linux-gnu/libssl.so.3 (0x00007f27)\n\t/lib64/ld-linux-x86-64.so.2 (0x00007f28)\n',
    );
    expect(parsed).toEqual({
      socat: SOCAT,
      loader: '/lib64/ld-linux-x86-64.so.2',
      libraries: [{ name: 'libssl.so.3', file: '/lib/x86_64-linux-gnu/libssl.so.3' }],
    });
    expect(parseLdd(SOCAT, '\tnot a dynamic executable\n')).toBeUndefined();
    const real = await relayBinaries(SOCAT);
    expect(real?.loader).toMatch(/^\/.*ld-linux.*\.so/);
    expect(real?.libraries.map((l) => l.name)).toEqual(expect.arrayContaining(['libc.so.6']));
    expect(await relayBinaries('/nonexistent/socat')).toBeUndefined();
  });
});

describe.skipIf(!existsSync(BWRAP) || !existsSync(SOCAT))('the container relay, run for real', () => {
  let service: Server;
  let port: number;
  beforeAll(async () => {
    service = createServer((_req, res) => res.end('factory interface'));
    await new Promise<void>((r) => service.listen(0, '127.0.0.1', r));
    port = (service.address() as { port: number }).port;
  });
  afterAll(() => {
    service?.close();
  });

  it('carries a request through the egress proxy from a namespace of its own; loopback is out of reach', async () => {
    const relay = (await relayBinaries(SOCAT))!;
    const records: EgressRecord[] = [];
    const proxy = await startEgressProxy({
      policy: networkPolicyFrom(undefined),
      exceptions: [{ host: '127.0.0.1', port }],
      onRecord: (r) => records.push(r),
    });
    try {
      // the container's mounts, as bubblewrap binds: the proxy's socket directory and the relay's files
      const binds = [`${proxy.dir}:${SANDBOX_PROXY_DIR}:ro`, ...relayVolumes(relay)].flatMap((v) => {
        const [from, to] = v.split(':');
        return ['--ro-bind', from!, to!];
      });
      const script = `curl -s --max-time 5 -x http://127.0.0.1:3128 http://127.0.0.1:${port}/; echo " proxied=$?"; curl -s --max-time 2 http://127.0.0.1:${port}/; echo "direct=$?"`;
      const out = await new Promise<string>((resolve, reject) =>
        execFile(
          BWRAP,
          [
            '--ro-bind',
            '/',
            '/',
            '--dev',
            '/dev',
            '--proc',
            '/proc',
            '--tmpfs',
            '/run',
            '--tmpfs',
            '/tmp',
            ...binds,
            '--unshare-net',
            '--die-with-parent',
            '--',
            '/bin/sh',
            '-c',
            containerRelayScript(),
            'agentyard-egress-relay',
            '/bin/sh',
            '-c',
            script,
          ],
          { timeout: 20_000 },
          (err, stdout, stderr) => (err ? reject(new Error(`${err.message}: ${stderr}`)) : resolve(stdout)),
        ),
      );
      expect(out).toContain('factory interface proxied=0');
      expect(out).toMatch(/direct=[1-9]/);
    } finally {
      await proxy.close();
    }
    expect(records).toEqual(
      expect.arrayContaining([expect.objectContaining({ host: '127.0.0.1', port, allowed: true })]),
    );
  });
});
