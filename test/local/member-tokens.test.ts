import { beforeAll, describe, expect, it } from 'vitest';
import { createApiHandler } from '../../src/handlers/api.js';
import { SimulatedClock } from '../../src/local/clock.js';
import { controlRoutes, type LocalControl } from '../../src/local/control-routes.js';
import { LocalGateway } from '../../src/local/gateway.js';
import { MEMBER_TOKEN_TTL_S, mintMemberToken, verifyMemberToken } from '../../src/local/member-tokens.js';
import { createLogger } from '../../src/runtime/logger.js';
import { billingRecord } from '../handlers/api-fixtures.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { seedRecords } from '../support/seed.js';

/** `POST /local/tokens {"user_id"}` and the local gateway's handling of the member tokens it mints (DESIGN 8, 9). */

const API_TOKEN = 'local-test-token';
let app: TestApp;
let gateway: LocalGateway;

beforeAll(async () => {
  app = await createTestApp({ label: 'local-member-tokens' });
  const mint = (userId: string) => ({ token: mintMemberToken(API_TOKEN, userId, Math.floor(Date.now() / 1000)).token, expiresInS: MEMBER_TOKEN_TTL_S });
  const control = { clock: new SimulatedClock(new Date('2027-03-01T00:00:00Z')), logger: createLogger({ level: 'silent' }), health: () => ({ ready: true, parts: {} }), mintToken: mint } as unknown as LocalControl;
  gateway = new LocalGateway({
    apiToken: API_TOKEN,
    operatorSub: 'local-operator',
    logger: createLogger({ level: 'silent' }),
    control: (request, path) => controlRoutes(control)(request, path),
    handlers: { api: createApiHandler(app.depsFor('api')) },
  });
});

const get = async (path: string, token: string) => {
  const answer = await gateway.dispatch({ method: 'GET', url: path, headers: { authorization: `Bearer ${token}` }, body: '' });
  return { status: answer.status, body: JSON.parse(answer.body) as Record<string, any> };
};

async function minted(userId: unknown): Promise<{ status: number; body: Record<string, any> }> {
  const answer = await gateway.dispatch({ method: 'POST', url: '/local/tokens', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ user_id: userId }) });
  return { status: answer.status, body: JSON.parse(answer.body) as Record<string, any> };
}

describe('local member tokens', () => {
  it('POST /local/tokens mints a billing:self token for a user; a malformed user id is 400', async () => {
    const answer = await minted('auth0|5f7c8ec7c33c6c004bbafe82');
    expect(answer.status).toBe(201);
    expect(answer.body).toMatchObject({ token_type: 'Bearer', scope: 'billing:self', user_id: 'auth0|5f7c8ec7c33c6c004bbafe82', expires_in: MEMBER_TOKEN_TTL_S });
    expect(verifyMemberToken(API_TOKEN, answer.body.token, Math.floor(Date.now() / 1000))).toMatchObject({ sub: 'auth0|5f7c8ec7c33c6c004bbafe82', scope: 'billing:self' });
    expect((await minted('a/b')).status).toBe(400);
    expect((await minted(undefined)).status).toBe(400);
  });

  it('reaches the member\'s own records through the gateway and the api, another user\'s answer 404, a staff route 403', async () => {
    const [mine, theirs] = await seedRecords(app, billingRecord(app), billingRecord(app));
    const { body } = await minted(mine.user_id);
    const own = await get(`/v1/subscriptions/${mine.subscription_id}`, body.token);
    expect(own.status).toBe(200);
    expect(own.body.user_id).toBe(mine.user_id);
    expect((await get(`/v1/subscriptions/${theirs.subscription_id}`, body.token)).status).toBe(404);
    expect((await get(`/v1/users/${theirs.user_id}/subscriptions`, body.token)).status).toBe(404);
    // The gateway's authorizer refuses a route the token's scope does not reach, before the api runs.
    const staffRoute = await get('/v1/subscriptions?billing=failing', body.token);
    expect(staffRoute).toEqual({ status: 403, body: { message: 'Forbidden' } });
    // The local staff token still reads everything.
    expect((await get(`/v1/subscriptions/${theirs.subscription_id}`, API_TOKEN)).status).toBe(200);
  });

  it('refuses a tampered, expired or foreign-key token with 401', async () => {
    const nowS = Math.floor(Date.now() / 1000);
    const { token } = mintMemberToken(API_TOKEN, 'user-a', nowS);
    const [header, , signature] = token.split('.');
    const forged = `${header}.${Buffer.from(JSON.stringify({ sub: 'user-b', scope: 'billing:self', exp: nowS + 3600 })).toString('base64url')}.${signature}`;
    expect((await get('/v1/users/user-b/subscriptions', forged)).status).toBe(401);
    expect((await get('/v1/users/user-a/subscriptions', mintMemberToken(API_TOKEN, 'user-a', nowS - 2 * MEMBER_TOKEN_TTL_S).token)).status).toBe(401);
    expect((await get('/v1/users/user-a/subscriptions', mintMemberToken('another-runtime', 'user-a', nowS).token)).status).toBe(401);
    expect((await get('/v1/users/user-a/subscriptions', token)).status).toBe(200);
  });
});
