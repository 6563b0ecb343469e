import type { TestProject } from 'vitest/node';
import { startDynamoLocal } from '../../src/adapters/dynamodb/local-server.js';

/** One DynamoDB Local per `npm test` run, on a free port; each test file creates its own tables. */
export default async function setup(project: TestProject) {
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
