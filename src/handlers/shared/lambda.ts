import type { Context } from 'aws-lambda';
import type { AppDeps } from '../../runtime/deps.js';

/**
 * The exported Lambda `handler` of each function: builds the production deps once per cold start
 * (config parsed with zod; a missing table name or secret fails the cold start) and delegates to
 * the handler created from them. Tests and the local runtime call `create*Handler(deps)` directly.
 */
export function lambdaEntry<E, R>(
  functionName: string,
  create: (deps: AppDeps) => (event: E, context?: Context) => Promise<R>,
): (event: E, context: Context) => Promise<R> {
  let built: Promise<(event: E, context?: Context) => Promise<R>> | undefined;
  return async (event, context) => {
    built ??= import('../../runtime/production.js').then(async ({ productionDeps }) => create(await productionDeps(functionName)));
    return (await built)(event, context);
  };
}
