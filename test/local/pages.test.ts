import { describe, expect, it } from 'vitest';
import { documentedRouteKeys, openApiDocument } from '../../src/openapi/document.js';
import { localPages } from '../../src/local/pages.js';

/** The local runtime's pages: /openapi.json, its rendering at /docs, and the console's files. */

const pages = localPages({ baseUrl: () => 'http://127.0.0.1:3999' });
const get = (path: string, method = 'GET') => pages({ method, url: path, headers: {}, body: '' }, path);

describe('local pages', () => {
  it('serves the generated OpenAPI document with the runtime as its server', async () => {
    const answer = (await get('/openapi.json'))!;
    expect(answer.status).toBe(200);
    expect(answer.headers['content-type']).toBe('application/json');
    const served = JSON.parse(answer.body);
    expect(served).toEqual(JSON.parse(JSON.stringify(openApiDocument({ serverUrl: 'http://127.0.0.1:3999' }))));
    expect(served.servers[0].url).toBe('http://127.0.0.1:3999');
  });

  it('renders every operation on /docs as plain HTML, with no script and nothing from another origin', async () => {
    const answer = (await get('/docs'))!;
    expect(answer.status).toBe(200);
    expect(answer.headers['content-type']).toMatch(/^text\/html/);
    for (const key of documentedRouteKeys()) expect(answer.body).toContain(`<code>${key}</code>`);
    expect(answer.body).not.toMatch(/<script|https?:\/\/(?!127\.0\.0\.1)/);
    expect(answer.headers['content-security-policy']).toContain("default-src 'none'");
  });

  it('renders the descriptions\' Markdown (no literal backticks) and links every $ref to its schema', async () => {
    const body = (await get('/docs'))!.body;
    const text = body.replace(/<pre>[\s\S]*?<\/pre>/g, '');
    expect(text).not.toContain('`');
    expect(body).toContain('<code>billing=exceptions</code>');
    const linked = new Set([...body.matchAll(/<a href="#schema-([A-Za-z]+)">/g)].map((m) => m[1]));
    for (const name of ['SubscriptionResult', 'ResolveConflict', 'RetryRunList', 'Error']) expect(linked, name).toContain(name);
    for (const name of linked) expect(body, name).toContain(`id="schema-${name}"`);
    expect(body).not.toMatch(/<code>\{&quot;\$ref&quot;/);
  });

  it('serves the console from its folder and nothing outside it', async () => {
    expect((await get('/console'))).toMatchObject({ status: 302, headers: { location: '/console/' } });
    expect((await get('/'))).toMatchObject({ status: 302, headers: { location: '/console/' } });
    const index = (await get('/console/'))!;
    expect(index.status).toBe(200);
    expect(index.body).toContain('<title>Billing operator console</title>');
    expect(index.headers['content-security-policy']).toContain("connect-src 'self'");
    expect(JSON.parse((await get('/console/config.json'))!.body)).toEqual({ apiUrl: '' });
    for (const path of ['/console/../package.json', '/console/%2e%2e/package.json', '/console/.env', '/console/nope.js']) {
      expect((await get(path))!.status, path).toBe(404);
    }
    expect((await get('/console/', 'POST'))!.status).toBe(405);
    expect(await get('/v1/subscriptions')).toBeUndefined();
  });
});
