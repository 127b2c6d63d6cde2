#!/usr/bin/env node
// The stand-in agent of the README tour, for Agentyard's `command` harness. It calls no model: it reads the run
// document from stdin (format agentyard.run/v1), looks at the delivery attached as event-payload.json in its
// working directory (the run's workspace), and reports one answer as JSON-line events on stdout.
// Start the server with AGENTYARD_HARNESSES=command AGENTYARD_HARNESS_COMMAND_BIN=<this file> to use it; a
// real agent is AGENTYARD_HARNESSES=claude (or codex, gemini) with that CLI installed.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

let input = '';
for await (const chunk of process.stdin) input += chunk;
const run = JSON.parse(input);
if (run.format !== 'agentyard.run/v1') {
  process.stderr.write(`unexpected run document format ${run.format}\n`);
  process.exit(2);
}

const emit = (event) => process.stdout.write(`${JSON.stringify(event)}\n`);
const payloadFile = path.join(run.workspace, 'event-payload.json');
let answer;
if (existsSync(payloadFile)) {
  const payload = JSON.parse(readFileSync(payloadFile, 'utf8'));
  answer = `Read event-payload.json: build ${payload.build ?? '?'} is ${payload.status ?? 'unknown'}. (A real agent would now look for the cause.)`;
} else {
  answer = `No delivery attached; the task was: ${run.prompt.split('\n')[0]}`;
}
emit({ type: 'message', text: answer });
emit({ type: 'result', text: answer });
