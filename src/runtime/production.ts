import type { AppDeps } from './deps.js';

/** Production wiring (DynamoDB adapters, SQS, Stripe, Secrets Manager) for one function. */
export async function productionDeps(functionName: string): Promise<AppDeps> {
  throw new Error(`production wiring for ${functionName} is not built yet`);
}
