import type { BillingIndexes } from './billing-indexes.js';
import type { BillingLedger } from './billing-ledger.js';
import type { BillingGauges } from './gauges.js';

/** The three billing roles one DynamoDB adapter serves, as handlers get them (`AppDeps.billing`). */
export type BillingStore = BillingLedger & BillingIndexes & BillingGauges;
