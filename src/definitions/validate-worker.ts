import type { MessagePort } from 'node:worker_threads';
import type { DeploymentNotes, ValidationContext } from './context.ts';
import type { FactoryFileInput } from './load.ts';
import { validateFactory } from './validate.ts';
import type { ValidationResult } from './validate.ts';
import { parseValidateRequest } from './validate-request.ts';
import type { RequestProblem } from './validate-request.ts';
import { compileAllSchemas } from './schemas.ts';

// While the worker starts, so that no job's time budget pays for Ajv's lazy compiles.
compileAllSchemas();

/** The live state a validation may consult, in a form that crosses a thread boundary. */
export interface ContextSnapshot {
  knownWebhookUids?: string[];
  teamRunners?: string[];
  models?: { ids: string[]; closed: boolean };
  deploymentNotes?: DeploymentNotes;
  /** Secret questions (`secretExists`, `secretIsUrlSafe`) are asked over `port`. */
  secrets?: boolean;
}

export interface ValidateTask {
  /** The files, or a validate request's JSON body (UTF-8) to parse and check here first. */
  files?: FactoryFileInput[];
  body?: Uint8Array;
  context?: ContextSnapshot;
  /** To the pool: JobStarted first, then the secret questions. */
  port?: MessagePort;
}

/** Sent when the worker takes the job: the pool's time budget starts then, not at the worker's start. */
export type JobStarted = { started: true };

export type SecretQuestion = { id: number; ask: 'secretExists' | 'secretIsUrlSafe'; name: string };
export type SecretAnswer = { id: number; answer: boolean } | { id: number; error: string };
export type WorkerMessage = JobStarted | SecretQuestion;

function asker(port: MessagePort): (ask: SecretQuestion['ask'], name: string) => Promise<boolean> {
  let next = 0;
  const pending = new Map<number, { resolve: (v: boolean) => void; reject: (e: Error) => void }>();
  port.on('message', (message: SecretAnswer) => {
    const waiter = pending.get(message.id);
    if (!waiter) return;
    pending.delete(message.id);
    if ('error' in message) waiter.reject(new Error(message.error));
    else waiter.resolve(message.answer);
  });
  return (ask, name) =>
    new Promise<boolean>((resolve, reject) => {
      const id = next++;
      pending.set(id, { resolve, reject });
      port.postMessage({ id, ask, name } satisfies SecretQuestion);
    });
}

function contextOf(snapshot: ContextSnapshot, port: MessagePort | undefined): ValidationContext {
  const context: ValidationContext = {};
  if (snapshot.knownWebhookUids) context.knownWebhookUids = new Set(snapshot.knownWebhookUids);
  if (snapshot.teamRunners) {
    const runners = new Set(snapshot.teamRunners);
    context.teamRunnerExists = (name) => runners.has(name);
  }
  if (snapshot.deploymentNotes) context.deploymentNotes = snapshot.deploymentNotes;
  if (snapshot.models) context.models = { ids: new Set(snapshot.models.ids), closed: snapshot.models.closed };
  if (snapshot.secrets && port) {
    const ask = asker(port);
    context.secretExists = (name) => ask('secretExists', name);
    context.secretIsUrlSafe = (name) => ask('secretIsUrlSafe', name);
  }
  return context;
}

export type TaskOutcome = { result: ValidationResult } | { problem: RequestProblem };

/** The worker side of the definition pool: parse (a request body, then the files) and validate one tree. */
export default async function validateTask(task: ValidateTask): Promise<TaskOutcome> {
  task.port?.postMessage({ started: true } satisfies JobStarted);
  try {
    let files = task.files ?? [];
    if (task.body) {
      const parsed = parseValidateRequest(
        Buffer.from(task.body.buffer, task.body.byteOffset, task.body.length).toString('utf8'),
      );
      if ('problem' in parsed) return parsed;
      files = parsed.files;
    }
    return { result: await validateFactory(files, task.context ? contextOf(task.context, task.port) : undefined) };
  } finally {
    task.port?.close();
  }
}
