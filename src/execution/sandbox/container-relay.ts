/**
 * The egress relay of a container run. The container has its own network namespace with no interface but
 * loopback (`--network none`); its only way out is the execution's egress proxy, whose unix socket is mounted in
 * and relayed to `127.0.0.1:3128` by socat, as in a bubblewrap sandbox. A runner's image rarely has socat, so the
 * relay is this host's socat, run by this host's dynamic loader with the libraries it links, each mounted
 * read-only under /run/agentyard-relay: it runs in any image of the same architecture that has /bin/sh.
 */
import path from 'node:path';
import { commandEnv, execCommand, succeeded } from '../../kernel/run-command.ts';
import { SANDBOX_PROXY_DIR, SANDBOX_PROXY_PORT } from './bubblewrap.ts';

/** Where the relay's files are inside the container. */
export const RELAY_DIR = '/run/agentyard-relay';

/** Host files the relay needs: socat, the dynamic loader that runs it and the libraries it links. */
export interface RelayBinaries {
  socat: string;
  loader: string;
  /** Library name as the loader looks it up → the host file. */
  libraries: { name: string; file: string }[];
}

/**
 * socat's loader and libraries from `ldd`'s answer: `libssl.so.3 => /lib/…/libssl.so.3 (0x…)` lines are
 * libraries, the absolute path without `=>` is the loader; the vDSO has no file. Undefined when no loader is named.
 */
export function parseLdd(socat: string, output: string): RelayBinaries | undefined {
  let loader: string | undefined;
  const libraries: { name: string; file: string }[] = [];
  for (const line of output.split('\n')) {
    const linked = line.match(/^\s*(\S+)\s+=>\s+(\/\S+)\s+\(0x[0-9a-f]+\)\s*$/i);
    if (linked) {
      libraries.push({ name: linked[1]!, file: linked[2]! });
      continue;
    }
    const direct = line.match(/^\s*(\/\S+)\s+\(0x[0-9a-f]+\)\s*$/i);
    if (direct) loader = direct[1]!;
  }
  return loader ? { socat, loader, libraries } : undefined;
}

const found = new Map<string, Promise<RelayBinaries | undefined>>();

/** The relay's host files for this socat (read once): undefined when socat or ldd is missing or says nothing usable. */
export function relayBinaries(socat: string): Promise<RelayBinaries | undefined> {
  let known = found.get(socat);
  if (!known) {
    known = execCommand({ command: 'ldd', args: [socat], cwd: '/', env: commandEnv(), blockTimeoutMs: 10_000 }).then(
      (outcome) => (succeeded(outcome) ? parseLdd(socat, outcome.stdout.toString('utf8')) : undefined),
    );
    found.set(socat, known);
  }
  return known;
}

/** The `--volume` values that put the relay's files into the container, read-only. */
export function relayVolumes(relay: RelayBinaries): string[] {
  return [
    `${relay.socat}:${RELAY_DIR}/socat:ro`,
    `${relay.loader}:${RELAY_DIR}/ld.so:ro`,
    ...relay.libraries.map((l) => `${l.file}:${RELAY_DIR}/lib/${path.basename(l.name)}:ro`),
  ];
}

/**
 * The shell script (`sh -c <script> agentyard-egress-relay <command> <args…>`) that starts the relay and execs
 * the agent once the relay listens. Only sh builtins wait for the port (an image may have no grep).
 */
export function containerRelayScript(): string {
  const port = SANDBOX_PROXY_PORT.toString(16).toUpperCase().padStart(4, '0');
  return [
    `${RELAY_DIR}/ld.so --library-path ${RELAY_DIR}/lib ${RELAY_DIR}/socat TCP4-LISTEN:${SANDBOX_PROXY_PORT},bind=127.0.0.1,fork,reuseaddr,backlog=4096 UNIX-CONNECT:${SANDBOX_PROXY_DIR}/proxy.sock </dev/null >/dev/null 2>&1 &`,
    'i=0',
    'while [ $i -lt 500 ]; do',
    `  while read -r _ l _ s _; do [ "$l" = "0100007F:${port}" ] && [ "$s" = "0A" ] && break 2; done < /proc/net/tcp`,
    '  i=$((i+1)); sleep 0.01 2>/dev/null',
    'done',
    'exec "$@"',
  ].join('\n');
}
