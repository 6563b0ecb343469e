import { ClientCredentialsTokens, type ClientCredentials, type ServiceCredentials } from '../adapters/payments-service/client-credentials.js';
import { RailRouter } from '../adapters/payments-service/http-clients.js';
import type { PaymentSimulator } from '../adapters/processor/simulator.js';
import type { SimulatedServicesAuth } from '../adapters/processor/simulator-services.js';
import { ProcessorOutageError } from '../domain/errors.js';
import type { AccountDirectory } from '../domain/ports/account-directory.js';
import type { PaymentProcessor } from '../domain/ports/processor.js';

/** Where the local functions' token requests go: answered in process by the simulator's token endpoint. */
const LOCAL_TOKEN_URL = 'http://127.0.0.1/local/payments-service/oauth/token';

/**
 * The payments and accounts services as `npm start` calls them: every call presents a
 * client-credentials token (fetched, cached and renewed by the deployed functions' own
 * ClientCredentialsTokens) that the simulator checks as the services do, fetched once more when
 * refused, then our outage. The card rail is Stripe's and stays the simulator itself.
 * In process rather than over HTTP, so the simulator's outcomes (an `error` is a counted
 * processor error) read as they always have (docs/decisions.md).
 */
export function authenticatedSimulatorServices(simulator: PaymentSimulator, auth: SimulatedServicesAuth, client: ClientCredentials): { processor: PaymentProcessor; accounts: AccountDirectory } {
  const tokenFetch = async (_url: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const headers = new Headers(init?.headers);
    const answer = auth.token(headers.get('authorization') ?? undefined, String(init?.body ?? ''));
    return new Response(JSON.stringify(answer.body), { status: answer.status, headers: { 'content-type': 'application/json' } });
  };
  const tokensFor = (service: string) => new ClientCredentialsTokens({ tokenUrl: LOCAL_TOKEN_URL, credentials: client, service, fetch: tokenFetch as typeof fetch });
  const payments = tokensFor('payments');
  const accounts = tokensFor('accounts');
  const presented: PaymentProcessor = {
    submit: async (request) => (await authorize(auth, payments, 'payments'), simulator.submit(request)),
    findRefund: async (query) => (await authorize(auth, payments, 'payments'), simulator.findRefund(query)),
  };
  return {
    processor: new RailRouter({ card: simulator, ach: presented, pinless: presented }),
    accounts: { getAccount: async (userId) => (await authorize(auth, accounts, 'accounts'), simulator.getAccount(userId)) },
  };
}

/** The token check each call meets: a refused token is replaced once, then the refusal stands. */
async function authorize(auth: SimulatedServicesAuth, tokens: ServiceCredentials, service: string): Promise<void> {
  const first = await tokens.authorization();
  if (auth.accepts(first)) return;
  tokens.refused(first);
  if (auth.accepts(await tokens.authorization())) return;
  throw new ProcessorOutageError(service, 'processor_auth', { cause: new Error(`the ${service} simulator refused the token`) });
}
