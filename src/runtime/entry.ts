import type { Context } from 'aws-lambda';

/**
 * A Lambda `handler` whose deps are built once per cold start, on the first invocation (a failed
 * build is retried by the next one), then handed to `create`.
 */
export function builtOnce<D, E, R>(
  build: () => Promise<D>,
  create: (deps: D) => (event: E, context?: Context) => Promise<R>,
): (event: E, context: Context) => Promise<R> {
  let built: Promise<(event: E, context?: Context) => Promise<R>> | undefined;
  return async (event, context) => {
    built ??= build().then(create, (error: unknown) => {
      built = undefined;
      throw error;
    });
    return (await built)(event, context);
  };
}
