/**
 * The baseline of bench/ingress.ts: a bare `node:http` server that reads a webhook delivery, parses its JSON
 * body and answers 202 `{"delivery_id": …}`, and does nothing else (no auth, no storage). Prints
 * `READY {"url": …}` when it listens.
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    try {
      JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      res.writeHead(400, { 'content-type': 'application/problem+json' }).end('{"status":400}');
      return;
    }
    res.writeHead(202, { 'content-type': 'application/json; charset=utf-8' });
    res.end(JSON.stringify({ delivery_id: `dlv_${randomBytes(13).toString('hex').slice(0, 26)}` }));
  });
});
server.keepAliveTimeout = 72_000;
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  process.stdout.write(`READY ${JSON.stringify({ url: `http://127.0.0.1:${port}` })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
