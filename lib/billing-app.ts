import { type App, Tags } from 'aws-cdk-lib';
import {
  type BillingAppConfig,
  PLACEHOLDER_ACCOUNTS_API_URL,
  PLACEHOLDER_JWT_ISSUER,
  PLACEHOLDER_PAYMENTS_API_URL,
  PLACEHOLDER_SERVICES_TOKEN_URL,
  readBillingAppConfig,
  retainsData,
} from './config.js';
import type { HandlerEntryResolver } from './handlers.js';
import { BillingStatefulStack } from './stateful-stack.js';
import { BillingStatelessStack } from './stateless-stack.js';

export interface BillingStacks {
  readonly config: BillingAppConfig;
  readonly stateful: BillingStatefulStack;
  readonly stateless: BillingStatelessStack;
}

export interface BuildBillingAppOptions {
  readonly handlerEntry?: HandlerEntryResolver;
}

/** Adds both stacks for the stage named in context; shared by bin/ and the infra tests. */
export function buildBillingApp(app: App, options: BuildBillingAppOptions = {}): BillingStacks {
  const config = readBillingAppConfig(app.node);
  assertNoPlaceholders(config);
  const env = { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION };
  const stateful = new BillingStatefulStack(app, `billing-${config.stage}-stateful`, {
    env,
    stage: config.stage,
    description: `Billing (${config.stage}): tables, stream, queues, secrets`,
    terminationProtection: retainsData(config.stage),
    ...(config.alarmEmail ? { alarmEmail: config.alarmEmail } : {}),
  });
  const stateless = new BillingStatelessStack(app, `billing-${config.stage}-stateless`, {
    env,
    stage: config.stage,
    description: `Billing (${config.stage}): functions, HTTP API, schedule, alarms`,
    stateful,
    collectionsRateMinutes: config.collectionsRateMinutes,
    jwtIssuer: config.jwtIssuer,
    jwtAudience: config.jwtAudience,
    paymentsApiUrl: config.paymentsApiUrl,
    accountsApiUrl: config.accountsApiUrl,
    servicesTokenUrl: config.servicesTokenUrl,
    ...(config.servicesVpc ? { servicesVpc: config.servicesVpc } : {}),
    balanceThresholdCents: config.balanceThresholdCents,
    processorBudget: config.processorBudget,
    ...(config.userIdClaim ? { userIdClaim: config.userIdClaim } : {}),
    ...(config.apiClientScopes ? { apiClientScopes: config.apiClientScopes } : {}),
    ...(config.reconciliationExceptionMaxAgeHours !== undefined ? { reconciliationExceptionMaxAgeHours: config.reconciliationExceptionMaxAgeHours } : {}),
    ...(options.handlerEntry ? { handlerEntry: options.handlerEntry } : {}),
  });
  Tags.of(app).add('service', 'billing');
  Tags.of(app).add('stage', config.stage);
  return { config, stateful, stateless };
}

/**
 * A stage that keeps data (every stage but dev) must not deploy with a placeholder issuer or
 * service URL: payments would go to payments.example.com. One line names what to pass.
 */
export function assertNoPlaceholders(config: BillingAppConfig): void {
  if (!retainsData(config.stage)) return;
  const placeholders = (
    [
      ['jwtIssuer', isPlaceholder(config.jwtIssuer, PLACEHOLDER_JWT_ISSUER)],
      ['paymentsApiUrl', isPlaceholder(config.paymentsApiUrl, PLACEHOLDER_PAYMENTS_API_URL)],
      ['accountsApiUrl', isPlaceholder(config.accountsApiUrl, PLACEHOLDER_ACCOUNTS_API_URL)],
      ['servicesTokenUrl', isPlaceholder(config.servicesTokenUrl, PLACEHOLDER_SERVICES_TOKEN_URL)],
    ] as const
  )
    .filter(([, isPlaceholder]) => isPlaceholder)
    .map(([key]) => key);
  if (placeholders.length > 0) {
    throw new PlaceholderConfigError(
      `Stage ${config.stage} uses placeholder values for ${placeholders.join(', ')}; pass ${placeholders.map((key) => `--context ${key}=...`).join(' ')} (only the dev stage may use placeholders).`,
    );
  }
}

/** The documented placeholder, or any host of the reserved example domains (RFC 2606). */
function isPlaceholder(value: string, placeholder: string): boolean {
  if (value === placeholder) return true;
  try {
    return /(^|\.)example\.(com|net|org)$/i.test(new URL(value).hostname);
  } catch {
    return false;
  }
}

export class PlaceholderConfigError extends Error {
  override readonly name = 'PlaceholderConfigError';
}
