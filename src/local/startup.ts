import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { DynamoLocalInUseError, reapStaleDynamoLocal } from '../adapters/dynamodb/local-server.js';
import type { FunctionName } from '../manifest/index.js';
import type { Logger } from '../runtime/logger.js';
import { SavedClockAheadError, SimulatedClock } from './clock.js';
import { controlRoutes, type LocalControl } from './control-routes.js';
import { LocalGateway, type GatewayResponse, type HttpHandler } from './gateway.js';
import type { StartupProgress } from './lifecycle.js';
import { LOCAL_OPERATOR_SUB, type LocalSystemOptions } from './options.js';
import { localPages } from './pages.js';
import { assertJavaAvailable, assertPortFree, LocalStartupError, portInUseMessage } from './runtime-errors.js';

const json = (status: number, body: unknown, headers: Record<string, string> = {}): GatewayResponse => ({
  status,
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
});

/**
 * The gateway, bound before anything else starts (a taken port fails first). The pages answer at
 * once; `/health` says which parts are up; the control, API and webhook routes answer 503 until
 * `control()` returns the finished runtime's control surface.
 */
export function localGateway(input: {
  readonly options: LocalSystemOptions;
  readonly logger: Logger;
  readonly progress: StartupProgress;
  readonly handlers: Partial<Record<FunctionName, HttpHandler>>;
  readonly control: () => LocalControl | undefined;
}): { readonly gateway: LocalGateway; listen(): Promise<string> } {
  const { options, progress } = input;
  let baseUrl = `http://${options.host}:${options.port}`;
  const pages = localPages({ baseUrl: () => baseUrl });
  const gateway = new LocalGateway({
    apiToken: options.secrets.apiToken,
    operatorSub: LOCAL_OPERATOR_SUB,
    logger: input.logger.child({ part: 'gateway' }),
    handlers: input.handlers,
    control: async (request, path) => {
      const page = await pages(request, path);
      if (page) return page;
      const control = input.control();
      if (control) return controlRoutes(control)(request, path);
      if (path === '/health') return json(503, { status: 'starting', parts: progress.parts });
      if (path.startsWith('/local/') || path.startsWith('/v1/') || path.startsWith('/webhooks/')) {
        return json(503, { error: { code: 'starting', message: 'the local runtime is still starting; poll GET /health' } }, { 'retry-after': '1' });
      }
      return undefined;
    },
  });
  const listen = async () => {
    try {
      baseUrl = await gateway.listen(options.port, options.host);
      return baseUrl;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EADDRINUSE') throw new LocalStartupError(portInUseMessage(options.port, options.host));
      if (code === 'EACCES') throw new LocalStartupError(`Port ${options.port} needs privileges on this machine; choose one above 1024: PORT=3000 npm start`);
      throw error;
    }
  };
  return { gateway, listen };
}

/**
 * The first thing a start does, before its port checks: the children an earlier run recorded on
 * this data directory (DynamoDB Local's pid file, or found in /proc) are another live runtime's
 * (refused) or orphans of a killed one (stopped, so their ports and files are free again).
 */
export async function reapOrphans(options: LocalSystemOptions, logger: Logger): Promise<void> {
  try {
    const reaped = await reapStaleDynamoLocal(join(options.dataDir, 'dynamodb'));
    if (reaped.length > 0) logger.warn({ pids: reaped }, 'stopped a stale DynamoDB Local left on this data directory by an earlier run');
  } catch (error) {
    if (error instanceof DynamoLocalInUseError) throw new LocalStartupError(error.message);
    throw error;
  }
}

/**
 * The checks a start makes, after the gateway bound its port, before it touches any data: Java
 * and a fixed DynamoDB Local port. Only after them may `--fresh` delete anything.
 */
export async function preflight(options: LocalSystemOptions, progress: StartupProgress): Promise<void> {
  assertJavaAvailable();
  if (options.dynamoPort) await assertPortFree(options.dynamoPort, 'DynamoDB Local', 'DYNAMO_LOCAL_PORT');
  progress.mark('java');
}

/** Wipes the data directory on `--fresh`, then resumes the saved clock (or starts it at `--now`). */
export function prepareDataDir(options: LocalSystemOptions): SimulatedClock {
  if (options.fresh) rmSync(options.dataDir, { recursive: true, force: true });
  mkdirSync(join(options.dataDir, 'dynamodb'), { recursive: true });
  try {
    return SimulatedClock.restore(join(options.dataDir, 'clock.json'), options.now, new Date());
  } catch (error) {
    if (error instanceof SavedClockAheadError) throw new LocalStartupError(error.message);
    throw error;
  }
}
