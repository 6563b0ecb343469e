import { ClientCredentialsTokens, parseClientCredentials, type ServiceCredentials } from '../../adapters/payments-service/client-credentials.js';
import { HttpAccountDirectory, HttpPaymentsService } from '../../adapters/payments-service/http-clients.js';
import { HttpPaymentsReport } from '../../adapters/payments-service/report.js';
import { ProcessorOutageError } from '../../domain/errors.js';
import { ConfigError, isPlaceholderSecret } from '../config.js';
import type { ServiceWiring } from './types.js';

type ServiceConfig = Parameters<ServiceWiring>[0];

/** A client-credentials token for one service, from the secret the manifest grants (docs/security.md). */
function tokensFor(service: 'payments' | 'accounts', config: ServiceConfig): ServiceCredentials {
  if (!config.tokenUrl) throw new ConfigError(`invalid configuration: the ${service} service has no token endpoint`);
  const value = config.secret('servicesClient');
  const credentials = parseClientCredentials(value);
  // Only dev starts on the stack's placeholder (production.ts): every call is then refused as the service would.
  if (!credentials && isPlaceholderSecret(value)) return unsetCredentials(service);
  if (!credentials) throw new ConfigError('invalid configuration: SERVICES_CLIENT_CREDENTIALS must be JSON {"client_id","client_secret"}');
  return new ClientCredentialsTokens({ tokenUrl: config.tokenUrl, credentials, service });
}

function unsetCredentials(service: string): ServiceCredentials {
  return {
    authorization: () => Promise.reject(new ProcessorOutageError(service, 'processor_auth', { cause: new Error('SERVICES_CLIENT_CREDENTIALS still holds a placeholder') })),
    refused: () => undefined,
  };
}

/** The payments service over HTTPS with a bearer token: the processor of the ACH and pinless rails. */
export const payments: ServiceWiring = (config) => {
  const tokens = tokensFor('payments', config);
  return { processor: new HttpPaymentsService(config.url, tokens), report: new HttpPaymentsReport(config.url, tokens) };
};

/** The accounts service over HTTPS with a bearer token: a user's payment accounts. */
export const accounts: ServiceWiring = (config) => ({ accounts: new HttpAccountDirectory(config.url, tokensFor('accounts', config)) });
