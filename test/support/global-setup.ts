import type { TestProject } from 'vitest/node';
import { startDynamoLocal } from '../../src/adapters/dynamodb/local-server.js';

/** One DynamoDB Local per `npm test` run, on a free port; each test file creates its own tables. */
export default async function setup(project: TestProject) {
  // A run that owns its DynamoDB Local (the model's long run, several vitest processes on one) names it.
  const given = process.env.TEST_DYNAMO_ENDPOINT;
  if (given) {
    project.provide('dynamoEndpoint', given);
    return async () => undefined;
  }
  const server = await startDynamoLocal();
  project.provide('dynamoEndpoint', server.endpoint);
  return async () => {
    await server.stop();
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    dynamoEndpoint: string;
  }
}
