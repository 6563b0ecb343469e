import { HttpAccountDirectory, HttpPaymentsService } from '../../adapters/payments-service/http-clients.js';
import { HttpPaymentsReport } from '../../adapters/payments-service/report.js';
import type { ServiceWiring } from './types.js';

/** The payments service over HTTP: the processor of the ACH and pinless rails. */
export const payments: ServiceWiring = ({ url }) => ({ processor: new HttpPaymentsService(url), report: new HttpPaymentsReport(url) });

/** The accounts service over HTTP: a user's payment accounts. */
export const accounts: ServiceWiring = ({ url }) => ({ accounts: new HttpAccountDirectory(url) });
