import type { Context } from 'aws-lambda';
import type { FunctionName } from '../manifest/index.js';
import type { AppDeps } from './deps.js';
import { builtOnce } from './entry.js';
import { productionDeps } from './production.js';
import type { Wiring } from './wiring/types.js';

/**
 * The exported Lambda `handler` of a function's entry module (src/functions/*.ts): builds the
 * production deps from the function's manifest and the adapters its entry imports, once per
 * cold start (a failed build is retried by the next invocation), and delegates to the handler
 * created from them. Tests and the local runtime call `create*Handler(deps)` directly.
 */
export function lambdaEntry<E, R>(
  functionName: FunctionName,
  create: (deps: AppDeps) => (event: E, context?: Context) => Promise<R>,
  wiring: Wiring,
): (event: E, context: Context) => Promise<R> {
  return builtOnce(() => productionDeps(functionName, wiring), create);
}
