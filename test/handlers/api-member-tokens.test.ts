import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { createApiHandler } from '../../src/handlers/api.js';
import type { HttpEvent } from '../../src/handlers/shared/http.js';
import type { Settings } from '../../src/runtime/deps.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { httpEvent, responseOf, type HttpEventOptions, type JwtAuth } from '../support/http-events.js';
import { seedRecords } from '../support/seed.js';
import { billingRecord, callerFor, holdLock, type Caller } from './api-fixtures.js';

/**
 * Member tokens (DESIGN 8): `billing:self` reaches only the token's own user on the member
 * routes; another user's resource answers 404 exactly as a missing one, before any lock or
 * Idempotency-Key lookup; members see no `data_*` and staff actors as `staff`; a staff scope
 * decides when present; the user id comes from the configured claim; which client may use which
 * scope is checked in the router.
 */

let app: TestApp;
let staff: Caller;

beforeAll(async () => {
  app = await createTestApp({ label: 'api-member-tokens' });
  staff = callerFor(app);
});

const member = (userId: string, extra: Partial<JwtAuth> = {}): JwtAuth => ({ sub: userId, scopes: ['billing:self'], ...extra });

/** The api handler with other settings (USER_ID_CLAIM, API_CLIENT_SCOPES). */
function callerWith(settings: Partial<Settings>): Caller {
  const deps = app.depsFor('api');
  const handler = createApiHandler({ ...deps, settings: { ...deps.settings, ...settings } });
  return async (method: string, options: HttpEventOptions = {}) => responseOf(await handler(httpEvent(method, { timeEpoch: app.clock.now().getTime(), ...options })));
}

const SUB = '/v1/subscriptions/{subscriptionId}';
const chargesOf = (userId: string) => app.simulator.charges().filter((c) => c.user_id === userId);
const pay = (id: string, auth: JwtAuth, key: string, call: Caller = staff) =>
  call('POST', { route: `${SUB}/pay`, pathParameters: { subscriptionId: id }, headers: { 'idempotency-key': key }, auth });

describe('a member token on the member routes', () => {
  it('reads its own subscriptions, and another user\'s answer 404 like an id that does not exist', async () => {
    const [mine, theirs] = await seedRecords(app, billingRecord(app), billingRecord(app));
    const own = await staff('GET', { route: '/v1/users/{userId}/subscriptions', pathParameters: { userId: mine.user_id }, auth: member(mine.user_id) });
    expect(own.status).toBe(200);
    expect(own.body.items.map((r: { subscription_id: string }) => r.subscription_id)).toEqual([mine.subscription_id]);
    const list = await staff('GET', { route: '/v1/users/{userId}/subscriptions', pathParameters: { userId: theirs.user_id }, auth: member(mine.user_id) });
    expect(list.status).toBe(404);
    expect(list.body.error.code).toBe('not_found');

    const byId = await staff('GET', { route: SUB, pathParameters: { subscriptionId: theirs.subscription_id }, auth: member(mine.user_id) });
    const missing = await staff('GET', { route: SUB, pathParameters: { subscriptionId: '00000000-0000-4000-8000-000000000000' }, auth: member(mine.user_id) });
    expect(byId.status).toBe(404);
    expect(missing.status).toBe(404);
    // Same code, same wording: nothing tells an existing id from a missing one.
    expect(byId.body.error.code).toBe(missing.body.error.code);
    expect(byId.body.error.message.replace(theirs.subscription_id, 'ID')).toBe(missing.body.error.message.replace('00000000-0000-4000-8000-000000000000', 'ID'));
    const history = await staff('GET', { route: `${SUB}/history`, pathParameters: { subscriptionId: theirs.subscription_id }, auth: member(mine.user_id) });
    expect(history.status).toBe(404);
    expect((await staff('GET', { route: SUB, pathParameters: { subscriptionId: mine.subscription_id }, auth: member(mine.user_id) })).status).toBe(200);
  });

  it('pays its own period; another user\'s is 404 before the lock and the Idempotency-Key lookup, and charges nothing', async () => {
    const [mine, theirs] = await seedRecords(app, billingRecord(app), billingRecord(app));
    // The other user's lock is held and a staff pay already used the key: a member must still see only 404.
    const staffPaid = await pay(theirs.subscription_id, { sub: 'operator-1', scopes: ['billing:write'] }, 'shared-key-1');
    expect(staffPaid.body.outcome).toBe('collected');
    await holdLock(app, theirs.user_id);
    const probe = await pay(theirs.subscription_id, member(mine.user_id), 'shared-key-1');
    expect(probe.status).toBe(404);
    expect(probe.body.error.code).toBe('not_found');
    expect(chargesOf(mine.user_id)).toHaveLength(0);
    expect(chargesOf(theirs.user_id)).toHaveLength(1);

    const own = await pay(mine.subscription_id, member(mine.user_id), 'my-key-1');
    expect(own.status).toBe(200);
    expect(own.body).toMatchObject({ outcome: 'collected', subscription: { user_id: mine.user_id, billing_status: 'COMPLETED' } });
    expect(chargesOf(mine.user_id)).toHaveLength(1);
  });

  it('sees a member projection: no data_* attributes, staff actors as staff, its own and the system\'s by name', async () => {
    const [record] = await seedRecords(app, billingRecord(app));
    expect((await pay(record.subscription_id, member(record.user_id), 'proj-1')).status).toBe(200);
    const [next] = (await staff('GET', { route: '/v1/users/{userId}/subscriptions', pathParameters: { userId: record.user_id } })).body.items;
    // The next period, moved by an operator: a staff actor on its audit row.
    const moved = await staff('PUT', { route: `${SUB}/billing-date`, pathParameters: { subscriptionId: next.subscription_id }, body: { billing_date: next.billing_date.replace(/T.*/, 'T15:00:00Z'), reason: 'asked by phone' } });
    expect(moved.status, JSON.stringify(moved.body)).toBe(200);

    const staffView = await staff('GET', { route: `${SUB}/history`, pathParameters: { subscriptionId: record.subscription_id } });
    expect(staffView.body.items.some((row: Record<string, unknown>) => Object.keys(row).some((k) => k.startsWith('data_'))), 'staff sees the decision context').toBe(true);
    const memberView = await staff('GET', { route: `${SUB}/history`, pathParameters: { subscriptionId: record.subscription_id }, auth: member(record.user_id) });
    expect(memberView.status).toBe(200);
    expect(memberView.body.items.length).toBe(staffView.body.items.length);
    for (const row of memberView.body.items as Record<string, unknown>[]) expect(Object.keys(row).filter((k) => k.startsWith('data_'))).toEqual([]);
    expect(memberView.body.items.map((row: { actor?: string }) => row.actor)).toContain(record.user_id);

    const movedHistory = await staff('GET', { route: `${SUB}/history`, pathParameters: { subscriptionId: moved.body.subscription.subscription_id }, auth: member(record.user_id) });
    const actors = movedHistory.body.items.map((row: { actor?: string }) => row.actor);
    expect(actors).toContain('staff');
    expect(actors).not.toContain('operator-1');
  });

  it('makes and reads loan payments only under its own user id', async () => {
    const me = `member-loans-${Date.now()}`;
    const body = { amount_cents: 2500, payment_method: 'pinless', account_last_four: '4242' };
    const other = await staff('POST', { route: '/v1/users/{userId}/loans/{loanId}/payments', pathParameters: { userId: 'someone-else', loanId: 'loan-1' }, headers: { 'idempotency-key': 'k1' }, body, auth: member(me) });
    expect(other.status).toBe(404);
    expect(chargesOf('someone-else')).toHaveLength(0);
    const own = await staff('POST', { route: '/v1/users/{userId}/loans/{loanId}/payments', pathParameters: { userId: me, loanId: 'loan-1' }, headers: { 'idempotency-key': 'k1' }, body, auth: member(me) });
    expect(own.status).toBe(201);
    const list = await staff('GET', { route: '/v1/users/{userId}/loans/{loanId}/payments', pathParameters: { userId: me, loanId: 'loan-1' }, auth: member(me) });
    expect(list.body.items).toHaveLength(1);
    const listOther = await staff('GET', { route: '/v1/users/{userId}/loans/{loanId}/payments', pathParameters: { userId: 'someone-else', loanId: 'loan-1' }, auth: member(me) });
    expect(listOther.status).toBe(404);
  });
});

describe('which scope decides', () => {
  it('billing:self reaches no staff route: the lists and operator actions answer 403', async () => {
    const [record] = await seedRecords(app, billingRecord(app));
    expect((await staff('GET', { route: '/v1/subscriptions', query: { billing: 'failing' }, auth: member(record.user_id) })).status).toBe(403);
    const waive = await staff('POST', { route: `${SUB}/waive`, pathParameters: { subscriptionId: record.subscription_id }, body: { reason: 'x' }, auth: member(record.user_id) });
    expect(waive.status).toBe(403);
    expect((await staff('GET', { route: SUB, pathParameters: { subscriptionId: record.subscription_id } })).body.billing_status).toBe('PENDING');
  });

  it('a staff scope beside billing:self decides: another user\'s record is read in full', async () => {
    const [record] = await seedRecords(app, billingRecord(app));
    const read = await staff('GET', { route: SUB, pathParameters: { subscriptionId: record.subscription_id }, auth: { sub: 'support-1', scopes: ['billing:self', 'billing:read'] } });
    expect(read.status).toBe(200);
    expect(read.body.user_id).toBe(record.user_id);
  });

  it('reads the user id from USER_ID_CLAIM; a token without it is 401', async () => {
    const claim = 'https://billing.example.com/user_id';
    const call = callerWith({ userIdClaim: claim });
    const [record] = await seedRecords(app, billingRecord(app));
    const auth = (userId?: string): JwtAuth => ({ sub: 'auth0|5f7c8ec7c33c6c004bbafe82', scopeClaim: 'openid billing:self', scopes: [], ...(userId ? { claims: { [claim]: userId } } : {}) });
    expect((await call('GET', { route: SUB, pathParameters: { subscriptionId: record.subscription_id }, auth: auth(record.user_id) })).status).toBe(200);
    expect((await call('GET', { route: SUB, pathParameters: { subscriptionId: record.subscription_id }, auth: auth('another-user') })).status).toBe(404);
    expect((await call('GET', { route: SUB, pathParameters: { subscriptionId: record.subscription_id }, auth: auth() })).status).toBe(401);
  });

  it('checks which client may use which scope (API_CLIENT_SCOPES), by client_id or azp', async () => {
    const call = callerWith({ clientScopes: { 'member-app': ['billing:self'], 'ops-console': ['billing:read', 'billing:write', 'billing:operate'] } });
    const [record] = await seedRecords(app, billingRecord(app));
    const get = (auth: JwtAuth) => call('GET', { route: SUB, pathParameters: { subscriptionId: record.subscription_id }, auth });
    expect((await get(member(record.user_id, { claims: { client_id: 'member-app' } }))).status).toBe(200);
    const memberAppAsStaff = await get({ sub: record.user_id, scopes: ['billing:read'], claims: { client_id: 'member-app' } });
    expect(memberAppAsStaff.status).toBe(403);
    expect(memberAppAsStaff.body.error.code).toBe('client_scope_not_allowed');
    expect((await get({ sub: 'operator-9', scopes: ['billing:read'], claims: { azp: 'ops-console' } })).status).toBe(200);
    expect((await get({ sub: 'operator-9', scopes: ['billing:read'], claims: { client_id: 'unknown-client' } })).status).toBe(403);
    expect((await get({ sub: 'operator-9', scopes: ['billing:read'] })).status).toBe(403);
  });
});

describe('an API Gateway v2 event as the JWT authorizer sends it (aws-lambda-go sample)', () => {
  const sample = JSON.parse(readFileSync(new URL('../fixtures/aws/aws-lambda-go-apigw-v2-request-jwt-authorizer.json', import.meta.url), 'utf8')) as HttpEvent;

  function asRoute(method: string, path: string, claims: Record<string, string>, scopes: string[]): HttpEvent {
    const event = structuredClone(sample) as HttpEvent & { requestContext: { authorizer: { jwt: { claims: Record<string, string>; scopes: string[] } } } };
    event.rawPath = path;
    event.rawQueryString = '';
    delete event.queryStringParameters;
    delete event.pathParameters;
    delete event.body;
    event.requestContext.http = { ...event.requestContext.http, method, path };
    event.requestContext.authorizer.jwt = { claims, scopes };
    return event;
  }

  it('routes the $default sample by its path and applies the member rules to its claims', async () => {
    const handler = createApiHandler(app.depsFor('api'));
    const [mine, theirs] = await seedRecords(app, billingRecord(app), billingRecord(app));
    const own = responseOf(await handler(asRoute('GET', `/v1/subscriptions/${mine.subscription_id}`, { sub: mine.user_id }, ['billing:self'])));
    expect(own.status).toBe(200);
    const other = responseOf(await handler(asRoute('GET', `/v1/subscriptions/${theirs.subscription_id}`, { sub: mine.user_id }, ['billing:self'])));
    expect(other.status).toBe(404);
    const noScope = responseOf(await handler(asRoute('GET', `/v1/subscriptions/${mine.subscription_id}`, { sub: mine.user_id }, ['scope1', 'scope2'])));
    expect(noScope.status).toBe(403);
  });
});
