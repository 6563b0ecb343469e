import { Aws, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type { FunctionManifest, ServiceId } from '../../src/manifest/index.js';
import type { ServicesVpc } from '../config.js';
import type { BillingFunction } from './billing-function.js';

/** The services that may sit on a private network: our own payments and accounts services (Stripe is public). */
const PRIVATE_SERVICES: readonly ServiceId[] = ['payments', 'accounts'];

export function callsPrivateServices(manifest: FunctionManifest): boolean {
  return (manifest.services ?? []).some((id) => PRIVATE_SERVICES.includes(id));
}

/**
 * Runs the function in the given subnets and security groups, with the network-interface
 * permissions Lambda needs for that written out (the AWS managed AWSLambdaVPCAccessExecutionRole,
 * inline and narrowed to these subnets and groups). The subnets must reach DynamoDB, SQS, Secrets
 * Manager, EventBridge, CloudWatch Logs and Stripe (endpoints or NAT): docs/security.md.
 */
export function placeInServicesVpc(billingFunction: BillingFunction, vpc: ServicesVpc): void {
  const ec2Arn = (type: string, id: string) => `arn:${Aws.PARTITION}:ec2:${Aws.REGION}:${Aws.ACCOUNT_ID}:${type}/${id}`;
  billingFunction.allow(
    new iam.PolicyStatement({
      sid: 'VpcCreateInterfaces',
      actions: ['ec2:CreateNetworkInterface'],
      resources: [ec2Arn('network-interface', '*'), ...vpc.subnetIds.map((id) => ec2Arn('subnet', id)), ...vpc.securityGroupIds.map((id) => ec2Arn('security-group', id))],
    }),
  );
  billingFunction.allow(
    new iam.PolicyStatement({
      sid: 'VpcManageInterfaces',
      actions: ['ec2:DeleteNetworkInterface', 'ec2:AssignPrivateIpAddresses', 'ec2:UnassignPrivateIpAddresses'],
      resources: [ec2Arn('network-interface', '*')],
    }),
  );
  billingFunction.allow(new iam.PolicyStatement({ sid: 'VpcDescribe', actions: ['ec2:DescribeNetworkInterfaces', 'ec2:DescribeSubnets'], resources: ['*'] }));
  const cfn = billingFunction.function.node.defaultChild as lambda.CfnFunction;
  cfn.vpcConfig = { subnetIds: [...vpc.subnetIds], securityGroupIds: [...vpc.securityGroupIds] };
  Validations.of(billingFunction.role).acknowledge(
    {
      id: 'AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ec2:<AWS::Region>:<AWS::AccountId>:network-interface/*]',
      reason: 'Lambda creates and deletes the network interfaces of a VPC function itself, under ids it generates at run time; creating one is further bound to the configured subnets and security groups.',
    },
    {
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: 'ec2:DescribeNetworkInterfaces and ec2:DescribeSubnets support no resource-level permission (IAM service authorization reference); Lambda needs them to attach the function to its VPC.',
    },
  );
}
