import { HttpAccountDirectory, HttpPaymentsService } from '../../adapters/payments-service/http-clients.js';
import type { PaymentsServiceWiring } from './types.js';

/** The payments service (ACH and pinless rails) and the accounts service, over HTTP. */
export const paymentsService: PaymentsServiceWiring = (urls) => ({
  rails: new HttpPaymentsService(urls.paymentsApiUrl),
  accounts: new HttpAccountDirectory(urls.accountsApiUrl),
});
