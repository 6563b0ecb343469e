import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { createTestApp, type TestApp } from '../support/app.js';
import { SubmissionRecorder } from './observers.js';

/** The app the model's sequences run on, shared by many of them, and what MODEL_PROFILE counts on it. */

type Json = Record<string, any>;

/** One app (its tables) serves many sequences, each with fresh users; recreated now and then so scans stay small. */
let shared: { app: TestApp; recorder: SubmissionRecorder; uses: number } | undefined;
const SEQUENCES_PER_APP = 15;
export const MODEL_STATUS_SHARDS = 1;

/** DynamoDB requests by phase (act, check, settle) and command (MODEL_PROFILE=1 prints them). */
export const DB_PROFILE: { phase: string; counts: Record<string, Record<string, number>>; ms: Record<string, number> } = { phase: 'act', counts: {}, ms: {} };

export async function sharedApp(): Promise<{ app: TestApp; recorder: SubmissionRecorder }> {
  if (!shared || shared.uses >= SEQUENCES_PER_APP) {
    // The finished app's tables go: DynamoDB Local keeps every table in memory, and a long run makes hundreds.
    if (shared) await dropTables(shared.app);
    // One status shard and one loan payment shard: the scan cost of a collections run stays a few queries (sharding has its own tests).
    // One clock for the directory and the system: no skew to allow for at the account gate.
    const app = await createTestApp({ label: 'model', statusShardCount: MODEL_STATUS_SHARDS, paymentShardCount: 1, settings: { accountClockSkewMs: 0 } });
    if (process.env.MODEL_PROFILE) profileRequests(app);
    const lookup = async (key: { user_id: string; billing_date: string }) => (await app.deps.billing.get(key)) as Json | undefined;
    shared = { app, recorder: new SubmissionRecorder(app.simulator, () => app.clock.now().getTime(), lookup), uses: 0 };
  }
  shared.uses += 1;
  return shared;
}

async function dropTables(app: TestApp): Promise<void> {
  for (const table of Object.values(app.db.tables)) await app.db.client.send(new DeleteTableCommand({ TableName: table })).catch(() => undefined);
}

/** Counts and times every DynamoDB request by phase and command, table and index (MODEL_PROFILE=1). */
function profileRequests(app: TestApp): void {
  app.db.client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { TableName?: string; IndexName?: string; Select?: string };
      const table = input.TableName ? ` ${input.TableName.replace(/^model-[0-9a-f]+-/, '')}${input.IndexName ? `/${input.IndexName}` : ''}${input.Select === 'COUNT' ? ' COUNT' : ''}` : '';
      const command = `${String((context as { commandName?: unknown }).commandName ?? '?')}${table}`;
      const byPhase = (DB_PROFILE.counts[DB_PROFILE.phase] ??= {});
      byPhase[command] = (byPhase[command] ?? 0) + 1;
      const t0 = performance.now();
      try {
        return await next(args);
      } finally {
        DB_PROFILE.ms[command] = (DB_PROFILE.ms[command] ?? 0) + performance.now() - t0;
      }
    },
    { step: 'initialize', name: 'modelProfile' },
  );
}
