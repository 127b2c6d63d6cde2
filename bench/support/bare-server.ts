/**
 * The baseline of the Run API benchmark: a bare `node:http` server that answers `POST /api/v1/agent/runs`
 * in the same shape as Agentyard (reads and parses the JSON body, answers the RunAgentResponse JSON) and
 * does nothing else. Prints `READY <url>` when it listens.
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    let body: { prompt?: unknown };
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { prompt?: unknown };
    } catch {
      res.writeHead(400, { 'content-type': 'application/problem+json' }).end('{"status":400}');
      return;
    }
    if (req.method !== 'POST' || typeof body.prompt !== 'string' || !req.headers.authorization) {
      res.writeHead(400, { 'content-type': 'application/problem+json' }).end('{"status":400}');
      return;
    }
    const id = `run_${randomBytes(13).toString('hex').slice(0, 26)}`;
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
    res.end(JSON.stringify({ run_id: id, task_id: id, state: 'QUEUED', at_capacity: false }));
  });
});
server.keepAliveTimeout = 72_000;
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  process.stdout.write(`READY http://127.0.0.1:${port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
