import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DynamoDBClient, GetItemCommand, QueryCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundle } from '../../bench/bundles.js';
import { replaySource, RequestRecorder, wavesOf, type RecordedRequest } from '../../bench/request-replay.js';
import { createTestDynamo, type TestDynamo } from '../support/dynamo.js';

/** The cold-start bench's second floor: what a first call sent, replayed by a bare client (bench/request-replay.ts). */
describe('same-requests floor', () => {
  let dynamo: TestDynamo;
  // Answers held 300 ms: the two Queries sent together overlap even when the machine is loaded and the second
  // reaches the proxy after the first was answered (a fresh-clone run beside two long model runs saw waves [1, 1, 1]).
  const recorder = new RequestRecorder(() => dynamo.endpoint, { latencyMs: 300 });
  const dir = mkdtempSync(join(tmpdir(), 'replay-test-'));

  beforeAll(async () => {
    dynamo = await createTestDynamo('replay');
    await recorder.start();
  });
  afterAll(async () => {
    await recorder.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('groups requests as they were awaited: one after another are two waves, sent together are one', () => {
    const at = (target: string, startedAt: number, endedAt: number): RecordedRequest => ({ target, input: {}, startedAt, endedAt });
    const waves = wavesOf([at('DynamoDB_20120810.Query', 12, 20), at('DynamoDB_20120810.GetItem', 0, 10), at('DynamoDB_20120810.Query', 11, 25), at('DynamoDB_20120810.PutItem', 26, 30)]);
    expect(waves.map((w) => w.map(([t]) => t.split('.')[1]))).toEqual([['GetItem'], ['Query', 'Query'], ['PutItem']]);
  });

  it('records what a client sends through it and replays the same requests, wave by wave, from a bundle of the bare client', async () => {
    const client = new DynamoDBClient({ region: 'us-east-1', endpoint: recorder.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
    const key = { user_id: { S: 'user-replay' }, billing_date: { S: '2026-12-01T00:00:00.000Z' } };
    const query = (shard: string) => new QueryCommand({ TableName: dynamo.tables.billingActivity, KeyConditionExpression: 'user_id = :u', ExpressionAttributeValues: { ':u': { S: shard } } });
    const recorded = await recorder.record(async () => {
      await client.send(new GetItemCommand({ TableName: dynamo.tables.billingActivity, Key: key, ConsistentRead: true }));
      await Promise.all([client.send(query('a')), client.send(query('b'))]);
    });
    client.destroy();
    expect(recorded.map((r) => r.target)).toEqual(['DynamoDB_20120810.GetItem', 'DynamoDB_20120810.Query', 'DynamoDB_20120810.Query']); // the Queries' order varies; both are Queries
    expect(recorded[0]!.input).toMatchObject({ Key: key, ConsistentRead: true });

    const waves = wavesOf(recorded);
    expect(waves.map((w) => w.length)).toEqual([1, 2]);
    const floor = await bundle('floor', dir, { contents: replaySource(waves) });
    const saved = { region: process.env.DYNAMO_REGION, endpoint: process.env.DYNAMO_ENDPOINT };
    process.env.DYNAMO_REGION = 'us-east-1';
    process.env.DYNAMO_ENDPOINT = recorder.endpoint;
    try {
      const { handler } = (await import(pathToFileURL(floor.file).href)) as { handler: (event: unknown) => Promise<{ requests: number }> };
      const replayed = await recorder.record(async () => {
        expect(await handler({ waves })).toEqual({ requests: 3 });
      });
      // The two Queries of a wave are answered in either order: compare each wave as a set.
      const asWaves = (rs: RecordedRequest[]) => wavesOf(rs).map((w) => w.map((r) => JSON.stringify(r)).sort());
      expect(asWaves(replayed)).toEqual(asWaves(recorded));
    } finally {
      for (const [name, value] of [['DYNAMO_REGION', saved.region], ['DYNAMO_ENDPOINT', saved.endpoint]] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });

  it('refuses a request of a service it has no bare client for rather than leaving it out', () => {
    expect(() => replaySource([[['AmazonSQS.SendMessage', {}]]])).toThrow(/no SDK client known for AmazonSQS.SendMessage/);
  });
});
