import { expect } from 'vitest';
import type { TestServer } from '../support/server.ts';

export interface Page {
  status: number;
  headers: Headers;
  text: string;
}

export async function get(server: TestServer, path: string, cookie?: string): Promise<Page> {
  const res = await fetch(`${server.url}${path}`, { headers: cookie ? { cookie } : {}, redirect: 'manual' });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

export async function postForm(
  server: TestServer,
  path: string,
  form: Record<string, string>,
  cookie?: string,
): Promise<Page> {
  const res = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}) },
    body: new URLSearchParams(form).toString(),
    redirect: 'manual',
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

export interface Session {
  cookie: string;
  csrf: string;
}

export async function signIn(server: TestServer, key: string): Promise<Session> {
  const res = await postForm(server, '/console/sign-in', { api_key: key });
  expect(res.status).toBe(303);
  const cookie = res.headers.get('set-cookie')!.split(';')[0]!;
  const overview = await get(server, '/', cookie);
  const csrf = /name="csrf" value="([^"]+)"/.exec(overview.text)![1]!;
  return { cookie, csrf };
}

/** How many times `needle` occurs in `text`. */
export function count(text: string, needle: string | RegExp): number {
  return typeof needle === 'string' ? text.split(needle).length - 1 : (text.match(needle) ?? []).length;
}
