/** What the console needs of the application: in-process requests (Fastify's `inject`). */
export interface InProcessHttp {
  inject(request: {
    method: string;
    url: string;
    headers: Record<string, string>;
    query?: Record<string, string>;
    payload?: string;
    /** The browser's address: the API's per-address budgets count the person, not the console. */
    remoteAddress?: string;
  }): PromiseLike<{
    statusCode: number;
    statusMessage: string;
    body: string;
    headers: Record<string, string | string[] | number | undefined>;
    rawPayload?: Buffer;
  }>;
}

/** A problem document the API answered; pages show its detail and status. */
export class ApiProblem extends Error {
  readonly status: number;
  readonly code: string;
  readonly detail: string;
  /** Seconds, when the API said when to retry (429). */
  readonly retryAfter: string | undefined;

  constructor(status: number, code: string, detail: string, retryAfter?: string) {
    super(`${status} ${code}: ${detail}`);
    this.status = status;
    this.code = code;
    this.detail = detail;
    this.retryAfter = retryAfter;
  }
}

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * The console's only way to read or change anything: the JSON API, called in process with the signed-in key, so
 * that pages show exactly what the API shows to that key and allow exactly what it allows.
 */
export class ConsoleApi {
  readonly #app: InProcessHttp;
  readonly #key: string;
  readonly #remoteAddress: string | undefined;

  constructor(app: InProcessHttp, key: string, remoteAddress?: string) {
    this.#app = app;
    this.#key = key;
    this.#remoteAddress = remoteAddress;
  }

  get<T>(path: string, query?: Record<string, string | undefined>): Promise<T> {
    return this.call<T>('GET', path, undefined, query);
  }

  /** A GET whose answer is not JSON (an event stream, a file): its body and headers, or the API's problem. */
  async raw(
    path: string,
    query?: Record<string, string>,
  ): Promise<{ body: string; bytes: Buffer; headers: Record<string, unknown> }> {
    const res = await this.#app.inject({
      method: 'GET',
      url: path.startsWith('/api/v1/') ? path : `/api/v1${path}`,
      headers: { authorization: `Bearer ${this.#key}` },
      ...(query ? { query } : {}),
    });
    if (res.statusCode >= 400) {
      let problem: { code?: string; detail?: string } = {};
      try {
        problem = JSON.parse(res.body) as typeof problem;
      } catch {
        // not a problem document
      }
      throw new ApiProblem(res.statusCode, problem.code ?? 'error', problem.detail ?? res.statusMessage);
    }
    return { body: res.body, bytes: res.rawPayload ?? Buffer.from(res.body), headers: res.headers ?? {} };
  }

  async call<T>(method: Method, path: string, body?: unknown, query?: Record<string, string | undefined>): Promise<T> {
    const options: Parameters<InProcessHttp['inject']>[0] = {
      method,
      url: `/api/v1${path}`,
      headers: { authorization: `Bearer ${this.#key}` },
      ...(this.#remoteAddress ? { remoteAddress: this.#remoteAddress } : {}),
    };
    if (query) {
      const defined = Object.entries(query).filter((e): e is [string, string] => e[1] !== undefined && e[1] !== '');
      options.query = Object.fromEntries(defined);
    }
    if (body !== undefined) {
      options.payload = JSON.stringify(body);
      options.headers['content-type'] = 'application/json';
    }
    const res = await this.#app.inject(options);
    const parsed: unknown = res.body === '' ? undefined : JSON.parse(res.body);
    if (res.statusCode >= 400) {
      const problem = (parsed ?? {}) as { code?: string; detail?: string };
      const retryAfter = res.headers['retry-after'];
      throw new ApiProblem(
        res.statusCode,
        problem.code ?? 'error',
        problem.detail ?? res.statusMessage,
        retryAfter === undefined ? undefined : String(retryAfter),
      );
    }
    return parsed as T;
  }
}

export const enc = encodeURIComponent;
