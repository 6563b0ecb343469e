import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoProcessorBudgetStore } from '../adapters/dynamodb/processor-budget-store.js';
import { DEFAULT_BUDGET_PER_SECOND, DEFAULT_PERSON_SHARE, type BudgetClass, type ProcessorBudgetSettings } from '../domain/processor-budget.js';
import type { FunctionManifest, FunctionName } from '../manifest/index.js';
import { ConfigError } from './config.js';
import { callsProcessorOf } from './processors.js';
import { ProcessorLimiter } from './processor-limiter.js';

/** The functions people start their calls from (manual pay, retry-billing, loan payments, reactivation); the rest are scheduled. */
const PERSON_STARTED: ReadonlySet<FunctionName> = new Set<FunctionName>(['api', 'memberships-consumer']);

export function budgetClassOf(name: FunctionName): BudgetClass {
  return PERSON_STARTED.has(name) ? 'person' : 'scheduled';
}

/**
 * The budgets from the environment: each a positive whole number of requests per second, the share
 * a fraction in [0, 1). `defaults` false (the local runtime): absent budgets mean no limiter.
 */
export function budgetSettingsFrom(env: NodeJS.ProcessEnv, defaults: boolean): ProcessorBudgetSettings | undefined {
  const stripe = env.STRIPE_BUDGET_PER_SECOND;
  const payments = env.PAYMENTS_BUDGET_PER_SECOND;
  if (!defaults && !stripe && !payments) return undefined;
  return {
    perSecond: { stripe: perSecond('STRIPE_BUDGET_PER_SECOND', stripe), payments: perSecond('PAYMENTS_BUDGET_PER_SECOND', payments) },
    personShare: share(env.PROCESSOR_PERSON_SHARE),
  };
}

function perSecond(name: string, value: string | undefined): number {
  if (value === undefined || value === '') return DEFAULT_BUDGET_PER_SECOND;
  if (!/^[1-9]\d{0,5}$/.test(value.trim())) throw new ConfigError(`invalid configuration: ${name}: must be a whole number of requests per second (got ${value})`);
  return Number(value.trim());
}

function share(value: string | undefined): number {
  if (value === undefined || value === '') return DEFAULT_PERSON_SHARE;
  const n = Number(value);
  if (!/^0?\.\d+$|^0$/.test(value.trim()) || !(n >= 0 && n < 1)) throw new ConfigError(`invalid configuration: PROCESSOR_PERSON_SHARE: must be a fraction in [0, 1) (got ${value})`);
  return n;
}

/** The function's limiter on the locks table, when budgets are set and it calls a processor. */
export function limiterFor(
  name: FunctionName,
  manifest: FunctionManifest,
  settings: ProcessorBudgetSettings | undefined,
  client: DynamoDBClient,
  locksTable: string | undefined,
): ProcessorLimiter | undefined {
  if (!settings || !locksTable) return undefined;
  if (!callsProcessorOf(manifest, 'card') && !callsProcessorOf(manifest, 'ach')) return undefined;
  return new ProcessorLimiter({ store: new DynamoProcessorBudgetStore(client, locksTable), settings, klass: budgetClassOf(name) });
}

/** COLLECTIONS_INTERVAL_SECONDS, when set: whole seconds. */
export function intervalSetting(env: NodeJS.ProcessEnv): { collectionsIntervalSeconds?: number } {
  const value = env.COLLECTIONS_INTERVAL_SECONDS;
  if (value === undefined || value === '') return {};
  if (!/^[1-9]\d{0,5}$/.test(value.trim())) throw new ConfigError(`invalid configuration: COLLECTIONS_INTERVAL_SECONDS: must be whole seconds (got ${value})`);
  return { collectionsIntervalSeconds: Number(value.trim()) };
}

/** RECONCILIATION_MARGIN_SECONDS, when set: whole seconds before the timeout at which the job hands over. */
export function reconciliationMargin(env: NodeJS.ProcessEnv): { reconciliationMarginMs?: number } {
  const value = env.RECONCILIATION_MARGIN_SECONDS;
  if (value === undefined || value === '') return {};
  if (!/^[1-9]\d{0,3}$/.test(value.trim())) throw new ConfigError(`invalid configuration: RECONCILIATION_MARGIN_SECONDS: must be whole seconds (got ${value})`);
  return { reconciliationMarginMs: Number(value.trim()) * 1000 };
}
