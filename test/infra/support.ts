import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type BillingStacks, buildBillingApp } from '../../lib/billing-app.js';
import { HANDLER_NAMES, type HandlerEntryResolver } from '../../lib/handlers.js';

/**
 * Stub entry files, so the infra tests neither depend on the handlers' source nor bundle them
 * (bundling is skipped anyway, but NodejsFunction insists that the entry file exists).
 */
export function stubHandlerEntries(): HandlerEntryResolver {
  // NodejsFunction wants entries under the project root; node_modules/.cache is untracked.
  const dir = fileURLToPath(new URL(`../../node_modules/.cache/billing-infra-stubs/${process.pid}`, import.meta.url));
  mkdirSync(dir, { recursive: true });
  for (const name of HANDLER_NAMES) {
    writeFileSync(join(dir, `${name}.ts`), 'export const handler = async () => undefined;\n');
  }
  return (name) => join(dir, `${name}.ts`);
}

export interface SynthesizedBilling extends BillingStacks {
  readonly app: App;
  readonly statefulTemplate: Template;
  readonly statelessTemplate: Template;
}

/** A non-dev stage refuses placeholder URLs (lib/billing-app.ts): the infra tests give non-dev stages these; dev keeps the placeholders. */
export const TEST_SERVICE_CONTEXT = {
  jwtIssuer: 'https://issuer.test/',
  paymentsApiUrl: 'https://payments.test',
  accountsApiUrl: 'https://accounts.test',
  servicesTokenUrl: 'https://auth.test/oauth/token',
} as const;

export function newBillingApp(context: Record<string, unknown> = {}): { app: App } & BillingStacks {
  const services = (context.stage ?? 'dev') === 'dev' ? {} : TEST_SERVICE_CONTEXT;
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [], ...services, ...context } });
  return { app, ...buildBillingApp(app, { handlerEntry: stubHandlerEntries() }) };
}

export function synthBilling(context: Record<string, unknown> = {}): SynthesizedBilling {
  const built = newBillingApp(context);
  return {
    ...built,
    statefulTemplate: Template.fromStack(built.stateful),
    statelessTemplate: Template.fromStack(built.stateless),
  };
}

type CfnResource = { Type: string; Properties?: Record<string, unknown> };

export function resourcesOfType(template: Template, type: string): Record<string, CfnResource> {
  return template.findResources(type) as Record<string, CfnResource>;
}

/** The logical id of the one resource of `type` whose properties include `props`. */
export function logicalIdOf(template: Template, type: string, props: Record<string, unknown>): string {
  const found = Object.keys(template.findResources(type, { Properties: props }));
  if (found.length !== 1) throw new Error(`expected one ${type} matching ${JSON.stringify(props)}, found ${found.length}`);
  return found[0]!;
}

type Statement = { Sid?: string; Effect: string; Action: string | string[]; Resource: unknown };

export interface FunctionPermissions {
  readonly role: CfnResource;
  readonly statements: Statement[];
}

/** The role and every policy statement of the function named `functionName`. */
export function permissionsOf(template: Template, functionName: string): FunctionPermissions {
  const functions = Object.values(resourcesOfType(template, 'AWS::Lambda::Function'));
  const fn = functions.find((f) => f.Properties?.FunctionName === functionName);
  if (!fn) throw new Error(`no function ${functionName}`);
  const roleId = (fn.Properties!.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
  const role = template.toJSON().Resources[roleId] as CfnResource;
  const statements = Object.values(resourcesOfType(template, 'AWS::IAM::Policy'))
    .filter((policy) => JSON.stringify(policy.Properties?.Roles).includes(`"${roleId}"`))
    .flatMap((policy) => (policy.Properties!.PolicyDocument as { Statement: Statement[] }).Statement);
  return { role, statements };
}

export function actionsOf(statement: Statement): string[] {
  return Array.isArray(statement.Action) ? statement.Action : [statement.Action];
}

/** The logical ids (from `ids`) that a statement's resources refer to, directly or through an import. */
export function referencedIds(statement: Statement, ids: Record<string, string>): string[] {
  const text = JSON.stringify(statement.Resource);
  return Object.entries(ids)
    .filter(([, logicalId]) => text.includes(logicalId))
    .map(([name]) => name);
}
