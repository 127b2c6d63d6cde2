/** The ingress's own path matching (it is served from node:http, not Fastify's router). */
import { describe, expect, it } from 'vitest';
import { parseIngressPath } from '../../src/ingress/routes.ts';

describe('parseIngressPath', () => {
  it('reads the UID and the token segment', () => {
    expect(parseIngressPath('/webhooks/w/wh_1')).toEqual({ uid: 'wh_1', token: undefined });
    expect(parseIngressPath('/webhooks/w/wh_1/s3cr3t')).toEqual({ uid: 'wh_1', token: 's3cr3t' });
  });

  it('allows a trailing slash and ignores the query string', () => {
    expect(parseIngressPath('/webhooks/w/wh_1/')).toEqual({ uid: 'wh_1', token: undefined });
    expect(parseIngressPath('/webhooks/w/wh_1/tok/?a=1')).toEqual({ uid: 'wh_1', token: 'tok' });
    expect(parseIngressPath('/webhooks/w/wh_1?x=/y/z')).toEqual({ uid: 'wh_1', token: undefined });
  });

  it('decodes percent-encoded segments', () => {
    expect(parseIngressPath('/webhooks/w/wh_1/a%2Fb%20c')).toEqual({ uid: 'wh_1', token: 'a/b c' });
  });

  it.each([
    ['no UID', '/webhooks/w/'],
    ['an empty segment', '/webhooks/w//tok'],
    ['three segments', '/webhooks/w/wh_1/tok/more'],
    ['malformed percent-encoding', '/webhooks/w/wh_1/%E0%A4%A'],
    ['a segment over 500 characters', `/webhooks/w/wh_1/${'t'.repeat(501)}`],
  ])('answers undefined for %s', (_name, url) => {
    expect(parseIngressPath(url)).toBeUndefined();
  });
});
