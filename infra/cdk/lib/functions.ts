import * as fs from 'fs';
import * as path from 'path';
import { Duration, RemovalPolicy } from 'aws-cdk-lib/core';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Deployment } from './deployment';
import { allow, serviceRole, Statement } from './policies';

/** A function's log group, named as Lambda would name it for the template's function. */
export function logGroup(d: Deployment, groupId: string, fn: string): logs.LogGroup {
  return d.add(logs.LogGroup, groupId, {
    logGroupName: `/aws/lambda/${d.name}-${fn}`,
    retention: d.s.logRetentionDays as logs.RetentionDays,
    // The template's log groups go with the stack (CloudFormation's default).
    removalPolicy: RemovalPolicy.DESTROY,
  });
}

/** A function's role: Lambda assumes it. */
export function role(d: Deployment, roleId: string, policyName: string, statements: Statement[]): iam.Role {
  return serviceRole(d, roleId, 'lambda.amazonaws.com', policyName, statements);
}

export const writeLogs = (...groups: logs.LogGroup[]) => allow(['logs:CreateLogStream', 'logs:PutLogEvents'],
  groups.map((g) => g.logGroupArn));

export interface FunctionOptions {
  readonly description: string;
  readonly role: iam.IRole;
  readonly logGroup: logs.LogGroup;
  readonly timeoutSecs: number;
  readonly environment: Record<string, string | undefined>;
  readonly reservedConcurrentExecutions?: number;
  readonly layers?: lambda.ILayerVersion[];
}

/** One of the functions, from its build (`binary`); undefined environment variables are left out. */
export function fn(d: Deployment, fnId: string, binary: string, options: FunctionOptions): lambda.Function {
  const s = d.s;
  const created = d.add(lambda.Function, fnId, {
    // No functionName: CloudFormation names it (stack-LogicalId-random, at most 64), so a stack
    // name of any length deploys.
    description: options.description,
    role: options.role,
    runtime: lambda.Runtime.PROVIDED_AL2023,
    architecture: lambda.Architecture.ARM_64,
    handler: 'bootstrap',
    code: lambda.Code.fromAsset(functionCode(d.functionsDir, binary)),
    // Each function peaks under 20 MB resident (BENCHMARKS.md), so the smallest size is
    // enough; raising it buys CPU (Lambda scales CPU with memory), not room.
    memorySize: 128,
    timeout: Duration.seconds(options.timeoutSecs),
    reservedConcurrentExecutions: options.reservedConcurrentExecutions,
    layers: options.layers,
    logGroup: options.logGroup,
    loggingFormat: lambda.LoggingFormat.JSON,
    applicationLogLevelV2: s.applicationLogLevel as lambda.ApplicationLogLevel,
    systemLogLevelV2: s.systemLogLevel as lambda.SystemLogLevel,
    environment: definedOnly({ METRICS_NAMESPACE: d.namespace, ...options.environment }),
  });
  // Set on the resource: the function's own `tracing` prop would also grant X-Ray in
  // PassThrough mode, where the template grants it only for Active.
  (created.node.defaultChild as lambda.CfnFunction).tracingConfig = { mode: s.tracingMode };
  return created;
}

/** SNS and EventBridge invoke asynchronously: Lambda retries, then the failure destination. */
export function onFailureToDlq(d: Deployment, configId: string, target: lambda.Function, dlq: sqs.Queue): lambda.CfnEventInvokeConfig {
  return d.add(lambda.CfnEventInvokeConfig, configId, {
    functionName: target.functionName,
    qualifier: '$LATEST',
    maximumRetryAttempts: 2,
    maximumEventAgeInSeconds: 21600,
    destinationConfig: { onFailure: { destination: dlq.queueArn } },
  });
}

/** Lets the service (sns, events) invoke the function, for this source only. */
export function invokePermission(d: Deployment, permissionId: string, target: lambda.Function, service: string,
  sourceArn: string): lambda.CfnPermission {
  return d.add(lambda.CfnPermission, permissionId, {
    functionName: target.functionName,
    action: 'lambda:InvokeFunction',
    principal: service,
    sourceArn,
  });
}

/** What a function's role needs to have the queue as its event source. */
export const consumeQueue = (source: sqs.Queue) => allow(['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes'],
  [source.queueArn]);

/** The queue feeds the function in batches; the function reports the messages it failed on, which return to the queue. */
export function queueEventSource(d: Deployment, sourceId: string, source: sqs.Queue, target: lambda.Function,
  batching: { batchSize: number; maximumBatchingWindowInSeconds?: number }): lambda.CfnEventSourceMapping {
  return d.add(lambda.CfnEventSourceMapping, sourceId, {
    eventSourceArn: source.queueArn,
    functionName: target.functionName,
    ...batching,
    functionResponseTypes: ['ReportBatchItemFailures'],
  });
}

function definedOnly(variables: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(variables).filter((entry): entry is [string, string] => entry[1] !== undefined));
}

/** A built function's directory; `make build` (cargo lambda build --release --arm64) makes them. */
function functionCode(functionsDir: string, binary: string): string {
  const dir = path.join(functionsDir, binary);
  if (!fs.existsSync(path.join(dir, 'bootstrap'))) {
    throw new Error(`McpAsyncJobs: ${path.join(dir, 'bootstrap')} is missing: build the functions first (make build), `
      + 'or point functionsDir at where they are built');
  }
  return dir;
}
