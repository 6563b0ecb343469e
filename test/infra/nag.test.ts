import { Validations } from 'aws-cdk-lib';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { describe, expect, it } from 'vitest';
import { newBillingApp } from './support.js';

// Only cdk-nag is under test here; CDK's built-in template schema check costs ~4 s to load and
// runs on every `cdk synth` anyway.
process.env.CDK_VALIDATION = 'false';

/** Every `Validations.of(x).acknowledge()` in the tree: construct path, rule id, reason. */
function acknowledgements(root: IConstruct): { path: string; id: string; reason: string }[] {
  return root.node.findAll().flatMap((construct) =>
    construct.node.metadata
      .filter((entry) => entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
      .flatMap((entry) =>
        Object.entries(entry.data as Record<string, string>).map(([id, reason]) => ({
          path: construct.node.path,
          id: id.replace(/^annotation::/i, ''),
          reason,
        })),
      ),
  );
}

describe.each(['prod', 'dev'])('cdk-nag AwsSolutions on stage %s', (stage) => {
  it('reports no unacknowledged finding', () => {
    const { app } = newBillingApp({ stage });
    const report = new AwsSolutionsChecks(app).validateScope(app);
    const findings = report.violations.map((v) => `${v.ruleName} at ${v.violatingResources.map((r) => r.constructPath).join(', ')}`);
    expect(findings).toEqual([]);
  });

  it('passes as a CDK validation plugin at synth (the way bin/billing.ts runs it)', () => {
    const { app } = newBillingApp({ stage });
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
    const assembly = app.synth();
    const report = JSON.parse(readFileSync(join(assembly.directory, 'validation-report.json'), 'utf8')) as {
      pluginReports: { violations?: unknown[] }[];
    };
    // Warnings included: an empty report means no plugin reported anything at all.
    expect(report.pluginReports.flatMap((r) => r.violations ?? [])).toEqual([]);
  });
});

it('fails synth when a resource breaks a rule (the plugin is live, not vacuous)', () => {
  const { app, stateful } = newBillingApp({ stage: 'prod' });
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  new sqs.Queue(stateful, 'UnencryptedQueueWithoutDlq');
  expect(() => app.synth()).toThrow(/AwsSolutions-SQS3/);
});

describe('nag acknowledgements', () => {
  const { app } = newBillingApp({ stage: 'prod' });
  // CDK acknowledges some of its own template checks (CloudFormation-Validate::*) on the constructs it builds.
  const acks = acknowledgements(app).filter((a) => a.id.startsWith('AwsSolutions-'));

  it('are few and only for rules that cannot be met by design', () => {
    expect([...new Set(acks.map((a) => a.id.replace(/\[.*\]$/, '')))].sort()).toEqual([
      'AwsSolutions-APIG4',
      // The operator console's CloudFront distribution and its log bucket (lib/constructs/operator-console.ts).
      'AwsSolutions-CFR1',
      'AwsSolutions-CFR2',
      'AwsSolutions-CFR4',
      // CDK's BucketDeployment provider, which uploads the console files at deploy time.
      'AwsSolutions-IAM4',
      'AwsSolutions-IAM5',
      'AwsSolutions-L1',
      'AwsSolutions-S1',
      'AwsSolutions-SMG4',
      'AwsSolutions-SQS3',
    ]);
    // ...and dynamodb:ListStreams of the history stream's consumer, which IAM offers only on *.
    const iam = acks.filter((a) => /^AwsSolutions-(IAM|L1)/.test(a.id) && !a.path.includes('Custom::CDKBucketDeployment'));
    expect(iam.map((a) => `${a.id} ${a.path}`)).toEqual(['AwsSolutions-IAM5[Resource::*] billing-prod-stateless/EventsPublisherFunction/Role']);
    expect(acks.filter((a) => a.id === 'AwsSolutions-APIG4').map((a) => a.path.split('/').slice(-1)[0])).toHaveLength(3);
  });

  it('each carry a specific reason', () => {
    for (const ack of acks) expect(ack.reason.length, `${ack.id} at ${ack.path}`).toBeGreaterThan(80);
  });
});
