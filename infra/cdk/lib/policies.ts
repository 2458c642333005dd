import * as iam from 'aws-cdk-lib/aws-iam';
import { Deployment } from './deployment';

/** IAM statements as the template writes them. */
export interface Statement {
  readonly Effect: 'Allow';
  readonly Action: string | string[];
  readonly Resource: string | string[];
}

/** An IAM statement in the template's spelling: one action or resource alone, several as a list. */
export function allow(actions: string[], resources: string[]): Statement {
  const one = (values: string[]) => (values.length === 1 ? values[0] : values);
  return { Effect: 'Allow', Action: one(actions), Resource: one(resources) };
}

// X-Ray takes no resource-level permissions.
export const xray = () => allow(['xray:PutTraceSegments', 'xray:PutTelemetryRecords'], ['*']);

// Nor does DynamoDB's ListStreams (a stream event source's): the IAM service authorization
// reference names no resource type for it.
export const listStreams = () => allow(['dynamodb:ListStreams'], ['*']);

// Nor do SageMaker's lineage lists (the IAM service authorization reference names no resource
// type for them).
export const lineageLists = () => allow(['sagemaker:ListAssociations', 'sagemaker:ListArtifacts'], ['*']);

// The grants a deployment's settings decide are here rather than on Deployment, so that
// Deployment (which every part imports) needs nothing from this module.

/** X-Ray's grant, only with active tracing. */
export function tracing(d: Deployment): Statement[] {
  return d.s.tracingMode === 'Active' ? [xray()] : [];
}

/** Reading the endpoint's outputs under customer managed keys, when there are any. */
export function decryptOutputs(d: Deployment): Statement[] {
  return d.outputKeys.length > 0 ? [allow(['kms:Decrypt'], d.outputKeys)] : [];
}

/**
 * A role the service (lambda, events) assumes, with one inline policy. Written out as the
 * template writes it: iam.PolicyDocument would merge and reorder statements under the app's
 * @aws-cdk/aws-iam:minimizePolicies flag.
 */
export function serviceRole(d: Deployment, roleId: string, service: string, policyName: string,
  statements: Statement[]): iam.Role {
  const created = d.add(iam.Role, roleId, { assumedBy: new iam.ServicePrincipal(service) });
  (created.node.defaultChild as iam.CfnRole).policies = [
    { policyName, policyDocument: { Version: '2012-10-17', Statement: statements } },
  ];
  return created;
}
