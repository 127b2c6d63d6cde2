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
  /** Integration questions (`integrationConnected`, `resolveNames`) are asked over `port`. */
  integrations?: boolean;
}

export interface ValidateTask {
  /** The files, or a validate request's JSON body (UTF-8) to parse and check here first. */
  files?: FactoryFileInput[];
  body?: Uint8Array;
  context?: ContextSnapshot;
  /** To the pool: JobStarted first, then the questions about live state. */
  port?: MessagePort;
}

/** Sent when the worker takes the job: the pool's time budget starts then, not at the worker's start. */
export type JobStarted = { started: true };

/** A question about live state the worker cannot answer itself (the database, the providers' APIs). */
export type ContextQuestion =
  | { id: number; ask: 'secretExists' | 'secretIsUrlSafe' | 'integrationConnected'; name: string }
  | { id: number; ask: 'resolveNames'; provider: string; field: string; names: string[] };
/** `resolveNames` answers `[name, ids][]`; the other questions a boolean. */
export type ContextAnswer = { id: number; answer: boolean | [string, string[]][] } | { id: number; error: string };
export type WorkerMessage = JobStarted | ContextQuestion;

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
type Question = DistributiveOmit<ContextQuestion, 'id'>;
type Answer = Extract<ContextAnswer, { answer: unknown }>['answer'];

function asker(port: MessagePort): (question: Question) => Promise<Answer> {
  let next = 0;
  const pending = new Map<number, { resolve: (v: Answer) => void; reject: (e: Error) => void }>();
  port.on('message', (message: ContextAnswer) => {
    const waiter = pending.get(message.id);
    if (!waiter) return;
    pending.delete(message.id);
    if ('error' in message) waiter.reject(new Error(message.error));
    else waiter.resolve(message.answer);
  });
  return (question) =>
    new Promise((resolve, reject) => {
      const id = next++;
      pending.set(id, { resolve, reject });
      port.postMessage({ ...question, id } as ContextQuestion);
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
  const ask = port && (snapshot.secrets || snapshot.integrations) ? asker(port) : undefined;
  const yes = async (question: Question) => (await ask!(question)) === true;
  if (snapshot.secrets && ask) {
    context.secretExists = (name) => yes({ ask: 'secretExists', name });
    context.secretIsUrlSafe = (name) => yes({ ask: 'secretIsUrlSafe', name });
  }
  if (snapshot.integrations && ask) {
    context.integrationConnected = (name) => yes({ ask: 'integrationConnected', name });
    context.resolveNames = async (provider, field, names) => {
      const answer = await ask({ ask: 'resolveNames', provider, field, names: [...names] });
      return new Map(Array.isArray(answer) ? answer : []);
    };
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
