import type { Node } from 'constructs';
import { DEFAULT_BUDGET_PER_SECOND, DEFAULT_PERSON_SHARE, type ProcessorBudgetSettings } from '../src/domain/processor-budget.js';
import { apiAuthSettings, centsSetting, DEFAULT_BALANCE_THRESHOLD_CENTS, reconciliationSettings } from '../src/runtime/config.js';

/** Deploy-time settings read from CDK context (`--context key=value` or cdk.json). */
export interface BillingAppConfig {
  /** Prefix of every resource name; `dev` is the only stage whose data may be destroyed. */
  readonly stage: string;
  readonly collectionsRateMinutes: number;
  readonly jwtIssuer: string;
  readonly jwtAudience: readonly string[];
  /** Base URLs of the payments (ACH / pinless rails) and accounts services the collection attempt calls. */
  readonly paymentsApiUrl: string;
  readonly accountsApiUrl: string;
  /** The OAuth token endpoint both services' client-credentials tokens come from (context `servicesTokenUrl`, https only). */
  readonly servicesTokenUrl: string;
  /** Optional: the subnets and security groups of a VPC the functions that call those services run in (contexts `vpcSubnetIds`, `vpcSecurityGroupIds`). */
  readonly servicesVpc?: ServicesVpc;
  /** The balance-webhook gate in cents (context `balanceThresholdCents`, default DEFAULT_BALANCE_THRESHOLD_CENTS). */
  readonly balanceThresholdCents: number;
  /** Optional e-mail address subscribed to the alarm topic. */
  readonly alarmEmail?: string;
  /** The processors' budgets (DESIGN 13; contexts `stripeBudgetPerSecond`, `paymentsBudgetPerSecond`, `processorPersonShare`). */
  readonly processorBudget: ProcessorBudgetSettings;
  /** The JWT claim a member token's user id is read from (context `userIdClaim`, default `sub`). */
  readonly userIdClaim?: string;
  /** Which client may use which scope (context `apiClientScopes`, JSON `{"<client id>": ["<scope>", ...]}`). */
  readonly apiClientScopes?: Readonly<Record<string, readonly string[]>>;
  /** Hours a reconciliation exception may stay unresolved before its alarm (context `reconciliationExceptionMaxAgeHours`, default 72). */
  readonly reconciliationExceptionMaxAgeHours?: number;
}

/** A VPC placement by ids: both lists non-empty, or no VPC at all. */
export interface ServicesVpc {
  readonly subnetIds: readonly string[];
  readonly securityGroupIds: readonly string[];
}

export const DEFAULT_STAGE = 'dev';
export const DEFAULT_COLLECTIONS_RATE_MINUTES = 15;
export const PLACEHOLDER_JWT_ISSUER = 'https://auth.example.com/';
export const PLACEHOLDER_JWT_AUDIENCE = 'billing-api';
export const PLACEHOLDER_PAYMENTS_API_URL = 'https://payments.example.com';
export const PLACEHOLDER_ACCOUNTS_API_URL = 'https://accounts.example.com';
export const PLACEHOLDER_SERVICES_TOKEN_URL = 'https://auth.example.com/oauth/token';

const STAGE_PATTERN = /^[a-z][a-z0-9-]{0,11}$/;

export class InvalidContextError extends Error {
  constructor(key: string, value: unknown, expected: string) {
    super(`CDK context "${key}" is ${JSON.stringify(value)}; expected ${expected}`);
    this.name = 'InvalidContextError';
  }
}

export function readBillingAppConfig(node: Node): BillingAppConfig {
  const stage = String(node.tryGetContext('stage') ?? DEFAULT_STAGE);
  if (!STAGE_PATTERN.test(stage)) {
    throw new InvalidContextError('stage', stage, 'lowercase letters, digits and dashes, at most 12 characters');
  }
  const alarmEmail = node.tryGetContext('alarmEmail') as string | undefined;
  return {
    stage,
    collectionsRateMinutes: parseRateMinutes(node.tryGetContext('collectionsRate')),
    jwtIssuer: String(node.tryGetContext('jwtIssuer') ?? PLACEHOLDER_JWT_ISSUER),
    jwtAudience: String(node.tryGetContext('jwtAudience') ?? PLACEHOLDER_JWT_AUDIENCE)
      .split(',')
      .map((audience) => audience.trim())
      .filter((audience) => audience.length > 0),
    paymentsApiUrl: parseServiceUrl('paymentsApiUrl', node.tryGetContext('paymentsApiUrl') ?? PLACEHOLDER_PAYMENTS_API_URL),
    accountsApiUrl: parseServiceUrl('accountsApiUrl', node.tryGetContext('accountsApiUrl') ?? PLACEHOLDER_ACCOUNTS_API_URL),
    servicesTokenUrl: parseServiceUrl('servicesTokenUrl', node.tryGetContext('servicesTokenUrl') ?? PLACEHOLDER_SERVICES_TOKEN_URL),
    ...servicesVpcContext(node),
    balanceThresholdCents: parseBalanceThreshold(node.tryGetContext('balanceThresholdCents')),
    ...(alarmEmail ? { alarmEmail } : {}),
    processorBudget: {
      perSecond: {
        stripe: parseBudget('stripeBudgetPerSecond', node.tryGetContext('stripeBudgetPerSecond')),
        payments: parseBudget('paymentsBudgetPerSecond', node.tryGetContext('paymentsBudgetPerSecond')),
      },
      personShare: parseShare(node.tryGetContext('processorPersonShare')),
    },
    ...memberTokenContext(node),
    ...reconciliationContext(node),
  };
}

/** `reconciliationExceptionMaxAgeHours`, checked as the reconciliation-job checks RECONCILIATION_EXCEPTION_MAX_AGE_HOURS at cold start. */
function reconciliationContext(node: Node): { reconciliationExceptionMaxAgeHours?: number } {
  const value: unknown = node.tryGetContext('reconciliationExceptionMaxAgeHours');
  if (value === undefined) return {};
  try {
    return reconciliationSettings({ RECONCILIATION_EXCEPTION_MAX_AGE_HOURS: String(value) });
  } catch {
    throw new InvalidContextError('reconciliationExceptionMaxAgeHours', value, 'whole hours from 1 to 2880');
  }
}

/** Requests per second a processor accepts from us: a whole number from 1 to 100,000. */
export function parseBudget(key: string, value: unknown): number {
  if (value === undefined || value === null || value === '') return DEFAULT_BUDGET_PER_SECOND;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 100_000) throw new InvalidContextError(key, value, 'a whole number of requests per second (1-100000)');
  return n;
}

export function parseShare(value: unknown): number {
  if (value === undefined || value === null || value === '') return DEFAULT_PERSON_SHARE;
  const n = Number(value);
  if (!(n >= 0 && n < 1)) throw new InvalidContextError('processorPersonShare', value, 'a fraction in [0, 1)');
  return n;
}

/** A deployed function calls its services over `https:` only: user ids and amounts never travel in clear text. */
export function parseServiceUrl(key: string, value: unknown): string {
  const text = String(value);
  let protocol: string | undefined;
  try {
    protocol = new URL(text).protocol;
  } catch {
    protocol = undefined;
  }
  if (protocol !== 'https:') throw new InvalidContextError(key, value, 'an https: URL');
  return text;
}

const SUBNET_ID = /^subnet-[0-9a-f]{8,17}$/;
const SECURITY_GROUP_ID = /^sg-[0-9a-f]{8,17}$/;

/** `vpcSubnetIds` and `vpcSecurityGroupIds` (comma-separated or arrays): both given, or neither. */
export function servicesVpcContext(node: Node): Pick<BillingAppConfig, 'servicesVpc'> {
  const subnetIds = idList('vpcSubnetIds', node.tryGetContext('vpcSubnetIds'), SUBNET_ID);
  const securityGroupIds = idList('vpcSecurityGroupIds', node.tryGetContext('vpcSecurityGroupIds'), SECURITY_GROUP_ID);
  if (subnetIds.length === 0 && securityGroupIds.length === 0) return {};
  if (subnetIds.length === 0 || securityGroupIds.length === 0) {
    throw new InvalidContextError(subnetIds.length === 0 ? 'vpcSubnetIds' : 'vpcSecurityGroupIds', '', 'both vpcSubnetIds and vpcSecurityGroupIds, or neither');
  }
  return { servicesVpc: { subnetIds, securityGroupIds } };
}

function idList(key: string, value: unknown, pattern: RegExp): string[] {
  if (value === undefined || value === null || value === '') return [];
  const ids = (Array.isArray(value) ? value.map(String) : String(value).split(',')).map((id) => id.trim()).filter((id) => id.length > 0);
  const bad = ids.find((id) => !pattern.test(id));
  if (bad !== undefined) throw new InvalidContextError(key, value, `comma-separated ids like ${pattern.source}`);
  return ids;
}

/** The member-token settings from context, checked as the api checks them at cold start. */
function memberTokenContext(node: Node): Pick<BillingAppConfig, 'userIdClaim' | 'apiClientScopes'> {
  const claim = node.tryGetContext('userIdClaim') as unknown;
  const clients = node.tryGetContext('apiClientScopes') as unknown;
  const env = {
    ...(claim === undefined ? {} : { USER_ID_CLAIM: String(claim) }),
    ...(clients === undefined ? {} : { API_CLIENT_SCOPES: typeof clients === 'string' ? clients : JSON.stringify(clients) }),
  };
  try {
    const { userIdClaim, clientScopes } = apiAuthSettings(env);
    return { userIdClaim, ...(clientScopes ? { apiClientScopes: clientScopes } : {}) };
  } catch (error) {
    throw new InvalidContextError(claim === undefined ? 'apiClientScopes' : 'userIdClaim/apiClientScopes', { claim, clients }, (error as Error).message);
  }
}

export function parseBalanceThreshold(value: unknown): number {
  if (value === undefined || value === null) return DEFAULT_BALANCE_THRESHOLD_CENTS;
  const parsed = centsSetting.safeParse(value);
  if (!parsed.success) throw new InvalidContextError('balanceThresholdCents', value, 'a whole number of cents, digits only (e.g. 5000)');
  return parsed.data;
}

/** Accepts `15`, `"15"`, `"15 minutes"`, `"1 hour"`, `"2 hours"`. */
export function parseRateMinutes(value: unknown): number {
  if (value === undefined || value === null || value === '') return DEFAULT_COLLECTIONS_RATE_MINUTES;
  const match = /^\s*(\d+)\s*(minutes?|hours?)?\s*$/.exec(String(value));
  const amount = match ? Number(match[1]) : Number.NaN;
  const minutes = match?.[2]?.startsWith('hour') ? amount * 60 : amount;
  if (!Number.isInteger(minutes) || minutes < 1 || minutes > 24 * 60) {
    throw new InvalidContextError('collectionsRate', value, 'a whole number of minutes (1-1440) or "N minutes" / "N hours"');
  }
  return minutes;
}

/** `true` for stages whose data must survive a stack deletion. */
export function retainsData(stage: string): boolean {
  return stage !== DEFAULT_STAGE;
}

/** Every physical name carries the stage: `{stage}-{name}`. */
export function resourceName(stage: string, name: string): string {
  return `${stage}-${name}`;
}
