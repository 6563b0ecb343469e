import { describe, expect, it } from 'vitest';
import { ClientCredentialsTokens } from '../../../src/adapters/payments-service/client-credentials.js';
import { HttpAccountDirectory, HttpPaymentsService } from '../../../src/adapters/payments-service/http-clients.js';
import { PaymentSimulator } from '../../../src/adapters/processor/simulator.js';
import { SimulatedServicesAuth, simulatedServicesAnswer } from '../../../src/adapters/processor/simulator-services.js';
import { ProcessorOutageError } from '../../../src/domain/errors.js';
import { authenticatedSimulatorServices } from '../../../src/local/services-client.js';
import { ACH_PAYMENT_REQUEST } from '../../support/payment-requests.js';

const CLIENT = { client_id: 'billing-local', client_secret: 'local-services-client-secret' };
const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

const request = ACH_PAYMENT_REQUEST;

function setup(lifetimeS = 3600) {
  let wallMs = 1_000_000;
  const simulator = new PaymentSimulator({ now: () => new Date('2026-12-01T00:00:00Z') });
  const auth = new SimulatedServicesAuth(simulator, CLIENT, () => wallMs, lifetimeS);
  const call = (method: string, path: string, authorization: string | undefined, body = '') => simulatedServicesAnswer(simulator, auth, { method, path, authorization, body });
  const token = async () => {
    const answer = await call('POST', '/oauth/token', basic(CLIENT.client_id, CLIENT.client_secret), 'grant_type=client_credentials');
    return `Bearer ${(answer.body as { access_token: string }).access_token}`;
  };
  /** The deployed clients over the simulator's HTTP face, without a socket. */
  const fetchFace = (async (url: string | URL | Request, init?: RequestInit) => {
    const headers = new Headers(init?.headers);
    const answer = await call(init?.method ?? 'GET', new URL(String(url)).pathname, headers.get('authorization') ?? undefined, String(init?.body ?? ''));
    return new Response(JSON.stringify(answer.body), { status: answer.status, headers: { 'content-type': 'application/json' } });
  }) as typeof fetch;
  return { simulator, auth, call, token, fetchFace, advance: (ms: number) => (wallMs += ms) };
}

describe('the simulated payments and accounts services check credentials as the services do', () => {
  it('refuses a call without a token, and one with a token it never issued, with 401 invalid_token; nothing is charged', async () => {
    const { simulator, call } = setup();
    for (const authorization of [undefined, 'Bearer made-up', basic(CLIENT.client_id, CLIENT.client_secret)]) {
      const answer = await call('POST', '/payments', authorization, JSON.stringify(request));
      expect(answer).toEqual({ status: 401, body: { error: { code: 'invalid_token', message: expect.any(String) } } });
    }
    expect((await call('GET', '/accounts/u1', undefined)).status).toBe(401);
    expect(simulator.charges()).toEqual([]);
  });

  it('issues a token only to its client (HTTP Basic), and only for the client-credentials grant', async () => {
    const { call } = setup();
    expect(await call('POST', '/oauth/token', basic(CLIENT.client_id, 'wrong'), 'grant_type=client_credentials')).toEqual({ status: 401, body: { error: 'invalid_client' } });
    expect(await call('POST', '/oauth/token', undefined, 'grant_type=client_credentials')).toEqual({ status: 401, body: { error: 'invalid_client' } });
    expect((await call('POST', '/oauth/token', basic(CLIENT.client_id, CLIENT.client_secret), 'grant_type=password')).status).toBe(400);
    const issued = await call('POST', '/oauth/token', basic(CLIENT.client_id, CLIENT.client_secret), 'grant_type=client_credentials');
    expect(issued).toMatchObject({ status: 200, body: { token_type: 'Bearer', expires_in: 3600 } });
  });

  it('answers a payment for a token it issued, and refuses the same token once it expired', async () => {
    const { simulator, call, token, advance } = setup(60);
    const authorization = await token();
    expect(await call('POST', '/payments', authorization, JSON.stringify(request))).toMatchObject({ status: 200, body: { outcome: 'submitted' } });
    expect(simulator.charges()).toHaveLength(1);
    advance(60_000);
    expect((await call('POST', '/payments', authorization, JSON.stringify({ ...request, idempotency_key: 'sub-1:2' }))).status).toBe(401);
    expect(simulator.charges()).toHaveLength(1);
  });

  it('"auth": "revoked" refuses the client at the token endpoint and every token it had issued', async () => {
    const { simulator, call, token } = setup();
    const authorization = await token();
    simulator.configure({ auth: 'revoked' });
    expect((await call('GET', '/accounts/u1', authorization)).status).toBe(401);
    expect((await call('POST', '/oauth/token', basic(CLIENT.client_id, CLIENT.client_secret), 'grant_type=client_credentials')).status).toBe(401);
    simulator.configure({ auth: 'ok' });
    // A token issued before the revocation stays refused.
    expect((await call('GET', '/accounts/u1', authorization)).status).toBe(401);
    expect((await call('GET', '/accounts/u1', await token())).status).toBe(200);
  });

  it('is the contract the deployed clients speak: token fetched, payment and account answered, a decline with its brand', async () => {
    const { simulator, fetchFace } = setup();
    const tokens = new ClientCredentialsTokens({ tokenUrl: 'http://127.0.0.1/oauth/token', credentials: CLIENT, service: 'payments', fetch: fetchFace });
    const payments = new HttpPaymentsService('http://127.0.0.1', tokens, fetchFace);
    expect(await payments.submit(request)).toMatchObject({ outcome: 'submitted' });
    simulator.configure({ users: { u2: 'decline:insufficient_funds' } });
    expect(await payments.submit({ ...request, user_id: 'u2', idempotency_key: 'sub-2:1', rail: 'pinless' })).toMatchObject({ outcome: 'declined', decline_code: 'insufficient_funds', card_network: 'visa' });
    expect(await new HttpAccountDirectory('http://127.0.0.1', tokens, fetchFace).getAccount('u1')).toMatchObject({ status: 'active' });
    const wrong = new ClientCredentialsTokens({ tokenUrl: 'http://127.0.0.1/oauth/token', credentials: { ...CLIENT, client_secret: 'wrong' }, service: 'payments', fetch: fetchFace });
    await expect(new HttpPaymentsService('http://127.0.0.1', wrong, fetchFace).submit({ ...request, idempotency_key: 'sub-3:1' })).rejects.toMatchObject({ reason: 'processor_auth' });
  });
});

describe('the local runtime presents its client credentials on every ACH, pinless and accounts call', () => {
  it('charges through a token, renews it when it expires, and a client the services do not know is our outage', async () => {
    const { simulator, auth, advance } = setup(120);
    const local = authenticatedSimulatorServices(simulator, auth, CLIENT);
    expect(await local.processor.submit(request)).toMatchObject({ outcome: 'submitted' });
    advance(120_000);
    expect(await local.processor.submit({ ...request, idempotency_key: 'sub-1:2', rail: 'pinless' })).toMatchObject({ outcome: 'approved' });
    expect(await local.accounts.getAccount('u1')).toMatchObject({ status: 'active' });

    const stranger = authenticatedSimulatorServices(simulator, auth, { ...CLIENT, client_secret: 'not-the-one' });
    const refused = await stranger.processor.submit({ ...request, idempotency_key: 'sub-9:1' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ProcessorOutageError);
    expect(refused).toMatchObject({ service: 'payments', reason: 'processor_auth' });
    await expect(stranger.accounts.getAccount('u1')).rejects.toMatchObject({ service: 'accounts', reason: 'processor_auth' });
    // The card rail is Stripe's: no services token is involved.
    expect(await stranger.processor.submit({ ...request, idempotency_key: 'sub-9:2', rail: 'card' })).toMatchObject({ outcome: 'approved' });
    expect(simulator.charges().map((c) => c.idempotency_key)).toEqual(['sub-1:1', 'sub-1:2', 'sub-9:2']);
  });
});
