/**
 * The built-in agent's loop: ask the model (streaming chat completions with tools), run the tools it calls,
 * hand their results back, until it answers without a tool call; then wait for a follow-up or the end of
 * stdin. Follow-ups that arrive during a turn join the conversation before the next model request. The
 * conversation is saved after every step, so a later execution continues it.
 */
import { randomUUID } from 'node:crypto';
import type OpenAI from 'openai';
import type {
  ChatCompletionMessageParam,
  ChatCompletionMessageToolCall,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import type { AgentRunDocument } from './protocol.ts';
import { RequestBody } from './request-body.ts';
import { ToolArgumentError } from './tools.ts';
import type { ToolContext, ToolSpec } from './tools.ts';

export type Emit = (event: Record<string, unknown> & { type: string }) => void;

/** A session's conversation, kept as it grows: each save appends the messages added since the last one. */
export interface TranscriptStore {
  load(sessionId: string): Promise<ChatCompletionMessageParam[] | undefined>;
  append(sessionId: string, messages: readonly ChatCompletionMessageParam[]): Promise<void>;
}

export interface FollowupSource {
  /** Follow-ups received and not yet taken. */
  take(): string[];
  /** Resolves with the next follow-up, or undefined at the end of stdin. */
  next(signal: AbortSignal): Promise<string | undefined>;
}

export interface LoopDeps {
  client: OpenAI;
  doc: AgentRunDocument;
  tools: readonly ToolSpec[];
  toolEnv: Record<string, string>;
  emit: Emit;
  transcripts: TranscriptStore;
  followups: FollowupSource;
  /** Aborted on cancellation (SIGTERM) or at the deadline. */
  signal: AbortSignal;
  now?: () => number;
}

/** Why the loop ended badly: the run fails with this message. */
export class AgentStop extends Error {
  readonly subtype: string;
  constructor(subtype: string, message: string) {
    super(message);
    this.subtype = subtype;
  }
}

const SYSTEM_PROMPT = [
  'You are an autonomous software agent working in a sandboxed workspace, your working directory.',
  'Use the tools to inspect and change files and to run commands; nobody approves tool calls.',
  'When the task is done, answer with a short final report and no tool call: that answer is the result of the run.',
].join(' ');

interface StepReply {
  content: string;
  toolCalls: ChatCompletionMessageToolCall[];
  finishReason: string | null;
}

export class AgentLoop {
  readonly #d: LoopDeps;
  readonly #byName: Map<string, ToolSpec>;
  readonly #tools: ChatCompletionTool[];
  readonly #body: RequestBody;
  #messages: ChatCompletionMessageParam[] = [];
  #sessionId = '';
  #requests = 0;
  /** Messages already in the transcript file. */
  #saved = 0;

  constructor(deps: LoopDeps) {
    this.#d = deps;
    this.#byName = new Map(deps.tools.map((t) => [t.name, t]));
    this.#tools = deps.tools.map((t) => ({
      type: 'function',
      function: { name: t.name, description: t.description, parameters: t.parameters },
    }));
    this.#body = new RequestBody(deps.doc.model, this.#tools);
  }

  get sessionId(): string {
    return this.#sessionId;
  }

  /** Runs turns until stdin ends with no follow-up waiting. Throws AgentStop (max turns, deadline, cancel). */
  async run(): Promise<void> {
    const { doc, emit } = this.#d;
    await this.#open();
    emit({ type: 'session', session_id: this.#sessionId, model: doc.model });
    let prompts = 1;
    for (;;) {
      const answer = await this.#turn(() => (prompts += this.#takeFollowups()));
      emit({ type: 'result', text: answer, is_error: false, prompts, session_id: this.#sessionId });
      const queued = this.#takeFollowups();
      if (queued > 0) {
        prompts = queued;
        continue;
      }
      const next = await this.#d.followups.next(this.#d.signal);
      if (next === undefined) return;
      this.#push({ role: 'user', content: next });
      prompts = 1 + this.#takeFollowups();
    }
  }

  /** The conversation so far, or a new one; a continuation whose transcript is gone says what it continues. */
  async #open(): Promise<void> {
    const { doc, transcripts } = this.#d;
    if (doc.resume_session_id) {
      const earlier = await transcripts.load(doc.resume_session_id);
      this.#sessionId = doc.resume_session_id;
      if (earlier && earlier.length > 0) {
        this.#messages = earlier;
        this.#saved = earlier.length;
        this.#answerInterruptedCalls();
        this.#push({ role: 'user', content: doc.prompt });
        return;
      }
      this.#messages = this.#system();
      this.#push({
        role: 'user',
        content: `This continues an earlier session whose transcript is not available. The original task was:\n\n${doc.run_prompt}\n\nFollow-up from the user:\n\n${doc.prompt}`,
      });
      return;
    }
    this.#sessionId = randomUUID();
    this.#messages = this.#system();
    this.#push({ role: 'user', content: doc.prompt });
  }

  /**
   * A session stopped during a tool call (a cancel, a crash) ends with calls that have no result; the endpoint
   * refuses such a conversation, so each gets one saying it was interrupted.
   */
  #answerInterruptedCalls(): void {
    const lastAssistant = this.#messages.findLastIndex((m) => m.role === 'assistant');
    const last = this.#messages[lastAssistant];
    if (last?.role !== 'assistant' || !last.tool_calls?.length) return;
    const answered = new Set(
      this.#messages
        .slice(lastAssistant + 1)
        .map((m) => (m.role === 'tool' ? m.tool_call_id : undefined))
        .filter(Boolean),
    );
    for (const call of last.tool_calls)
      if (!answered.has(call.id))
        this.#push({
          role: 'tool',
          tool_call_id: call.id,
          content: 'Error: the tool call was interrupted (the run was stopped).',
        });
  }

  #system(): ChatCompletionMessageParam[] {
    const base = this.#d.doc.base_prompt;
    return [{ role: 'system', content: base ? `${SYSTEM_PROMPT}\n\n${base}` : SYSTEM_PROMPT }];
  }

  #push(message: ChatCompletionMessageParam): void {
    this.#messages.push(message);
  }

  #takeFollowups(): number {
    const taken = this.#d.followups.take();
    for (const text of taken) this.#push({ role: 'user', content: text });
    return taken.length;
  }

  async #save(): Promise<void> {
    if (this.#saved === this.#messages.length) return;
    await this.#d.transcripts.append(this.#sessionId, this.#messages.slice(this.#saved));
    this.#saved = this.#messages.length;
  }

  /** One turn: model requests and tool calls until an answer without a tool call. */
  async #turn(onStep: () => void): Promise<string> {
    const { doc, emit } = this.#d;
    for (;;) {
      onStep();
      if (this.#requests >= doc.max_turns)
        throw new AgentStop('error_max_turns', `the agent reached its limit of ${doc.max_turns} model turns`);
      this.#requests += 1;
      await this.#save();
      const reply = await this.#request();
      if (reply.content) emit({ type: 'message', role: 'assistant', text: reply.content });
      this.#push({
        role: 'assistant',
        content: reply.content || null,
        ...(reply.toolCalls.length ? { tool_calls: reply.toolCalls } : {}),
      });
      if (reply.toolCalls.length === 0) {
        await this.#save();
        return reply.content;
      }
      for (const call of reply.toolCalls) await this.#call(call);
    }
  }

  /** A streamed chat completion, put together from its chunks. */
  async #request(): Promise<StepReply> {
    const { client, doc, emit, signal } = this.#d;
    const timeout = AbortSignal.timeout(doc.request_timeout_ms);
    const requestSignal = AbortSignal.any([signal, timeout]);
    let content = '';
    const calls = new Map<number, { id: string; name: string; args: string }>();
    let finishReason: string | null = null;
    let usage: OpenAI.CompletionUsage | undefined;
    try {
      // the typed parameters pick the streaming overload; the body sent is the same request, pre-serialized
      const stream = await client.chat.completions.create(
        { model: doc.model, messages: [], stream: true },
        {
          signal: requestSignal,
          body: this.#body.build(this.#messages),
          headers: { 'content-type': 'application/json' },
        },
      );
      for await (const chunk of stream) {
        if (chunk.usage) usage = chunk.usage;
        const choice = chunk.choices?.[0];
        if (!choice) continue;
        if (choice.finish_reason) finishReason = choice.finish_reason;
        const delta = choice.delta;
        if (typeof delta?.content === 'string') content += delta.content;
        for (const tc of delta?.tool_calls ?? []) {
          const slot = calls.get(tc.index) ?? { id: '', name: '', args: '' };
          if (tc.id) slot.id = tc.id;
          if (tc.function?.name) slot.name += tc.function.name;
          if (tc.function?.arguments) slot.args += tc.function.arguments;
          calls.set(tc.index, slot);
        }
      }
    } catch (err) {
      if (signal.aborted)
        throw signal.reason instanceof AgentStop ? signal.reason : new AgentStop('cancelled', 'stopped');
      if (timeout.aborted)
        throw new AgentStop(
          'error_model',
          `the model endpoint did not answer within ${Math.round(doc.request_timeout_ms / 1000)} s`,
        );
      throw new AgentStop(
        'error_model',
        `the model request failed: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
    if (usage) {
      emit({
        type: 'usage',
        input_tokens: usage.prompt_tokens ?? 0,
        output_tokens: usage.completion_tokens ?? 0,
        cached_input_tokens: usage.prompt_tokens_details?.cached_tokens ?? 0,
      });
    }
    const toolCalls: ChatCompletionMessageToolCall[] = [...calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, c], i) => ({
        id: c.id || `call_${this.#requests}_${i}`,
        type: 'function' as const,
        function: { name: c.name, arguments: c.args },
      }));
    return { content, toolCalls, finishReason };
  }

  /** Runs one tool call; whatever goes wrong is the tool's error, which the model reads. */
  async #call(call: ChatCompletionMessageToolCall): Promise<void> {
    const { emit, signal } = this.#d;
    if (call.type !== 'function') return;
    const name = call.function.name;
    const tool = this.#byName.get(name);
    const category = tool?.category ?? 'command';
    let args: Record<string, unknown> = {};
    let argumentError: string | undefined;
    try {
      const parsed: unknown = call.function.arguments.trim() === '' ? {} : JSON.parse(call.function.arguments);
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
        argumentError = 'the arguments must be a JSON object';
      else args = parsed as Record<string, unknown>;
    } catch (err) {
      argumentError = `the arguments are not valid JSON (${(err as Error).message})`;
    }
    emit({
      type: 'tool_call',
      id: call.id,
      name,
      category,
      input: argumentError ? { raw: call.function.arguments.slice(0, 4096) } : args,
    });
    let ok: boolean;
    let text: string;
    let output: Record<string, unknown>;
    if (!tool) {
      ok = false;
      text = `Error: there is no tool named "${name}". The tools are: ${[...this.#byName.keys()].join(', ')}.`;
      output = { error: text };
    } else if (argumentError) {
      ok = false;
      text = `Error: ${argumentError}. Call ${name} again with arguments that match its schema.`;
      output = { error: text };
    } else {
      const ctx: ToolContext = { cwd: this.#d.doc.workspace, env: this.#d.toolEnv, signal };
      try {
        const outcome = await tool.run(args, ctx);
        ({ ok, text, output } = outcome);
      } catch (err) {
        if (signal.aborted)
          throw signal.reason instanceof AgentStop ? signal.reason : new AgentStop('cancelled', 'stopped');
        ok = false;
        const message = err instanceof Error ? err.message : String(err);
        text =
          err instanceof ToolArgumentError
            ? `Error: bad arguments for ${name}: ${message}. Call it again with arguments that match its schema.`
            : `Error: ${name} failed: ${message}`;
        output = { error: text };
      }
    }
    emit({ type: 'tool_result', id: call.id, name, category, status: ok ? 'completed' : 'failed', output });
    this.#push({ role: 'tool', tool_call_id: call.id, content: text || '(no output)' });
  }
}
