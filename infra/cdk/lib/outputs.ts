import { CfnOutput } from 'aws-cdk-lib/core';
import * as cognito from 'aws-cdk-lib/aws-cognito';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sagemaker from 'aws-cdk-lib/aws-sagemaker';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Deployment } from './deployment';
import { usesOAuth } from './settings';

/**
 * What the Outputs show; undefined where the stack has no such one. McpAsyncJobs implements it:
 * declared here so that this part does not import the construct.
 */
export interface Shown {
  readonly completionEventBusName?: string;
  readonly completionWebhookDlq?: sqs.Queue;
  readonly mcpToolsUrl: lambda.CfnUrl;
  readonly gatewayTarget?: lambda.Function;
  readonly resultsTable: dynamodb.Table;
  readonly pipelineResultsTable: dynamodb.Table;
  readonly eventsTable: dynamodb.Table;
  readonly subscriptionsTable: dynamodb.Table;
  readonly eventDeliveryQueue: sqs.Queue;
  readonly eventDeliveryDlq: sqs.Queue;
  readonly eventStreamFailureQueue: sqs.Queue;
  readonly pipelineResultsQueue?: sqs.Queue;
  readonly pipelineCallbackQueue?: sqs.Queue;
  readonly alarmTopicArn: string;
  readonly asyncFailureDlq: sqs.Queue;
  readonly successTopicArn: string;
  readonly errorTopicArn: string;
  readonly callerPolicy: iam.CfnManagedPolicy;
  readonly userPool?: cognito.CfnUserPool;
  readonly userPoolClient?: cognito.CfnUserPoolClient;
  readonly approverUserPoolClient?: cognito.CfnUserPoolClient;
}

/** The template's Outputs, under its names (and the logical id prefix). */
export function outputs(d: Deployment, jobs: Shown, oauthIssuer: string | undefined,
  endpointConfig: sagemaker.CfnEndpointConfig | undefined): void {
  const s = d.s;
  const region = d.region;
  const output = (outputId: string, value: string, description?: string) =>
    d.pin(new CfnOutput(d.scope, `Output${outputId}`, { value, description }), outputId);
  if (jobs.completionEventBusName) {
    output('CompletionEventBusName', jobs.completionEventBusName,
      'The EventBridge bus each recorded job outcome is announced on (source mcp.async-jobs).');
  }
  if (jobs.completionWebhookDlq) {
    output('CompletionWebhookDLQUrl', jobs.completionWebhookDlq.queueUrl, 'Completion events the webhook did not take within a day.');
  }
  output('Dashboard', `https://${region}.console.aws.amazon.com/cloudwatch/home?region=${region}#dashboards:name=${d.name}-jobs`,
    'The CloudWatch dashboard of jobs, runs, tool calls and the functions.');
  output('McpFunctionUrl', jobs.mcpToolsUrl.attrFunctionUrl, 'The MCP server; point clients at this URL followed by mcp.');
  if (jobs.gatewayTarget) {
    output('GatewayTargetFunctionArn', jobs.gatewayTarget.functionArn, 'The AgentCore Gateway target\'s function.');
  }
  output('ResultsTableName', jobs.resultsTable.tableName);
  output('PipelineResultsTableName', jobs.pipelineResultsTable.tableName);
  output('EventsTableName', jobs.eventsTable.tableName);
  output('SubscriptionsTableName', jobs.subscriptionsTable.tableName);
  output('EventDeliveryQueueUrl', jobs.eventDeliveryQueue.queueUrl,
    'MCP Events\' webhook deliveries waiting for a retry (and the events queued behind them), taken by event-delivery.');
  output('EventDeliveryDLQUrl', jobs.eventDeliveryDlq.queueUrl,
    'Webhook deliveries not finished in 20 receives (make redrive ARGS=--event-deliveries moves them back).');
  output('EventStreamFailureQueueUrl', jobs.eventStreamFailureQueue.queueUrl,
    'Records of events-stream batches event-delivery gave up on (shard and sequence numbers; the events stay in the log '
    + 'for events/poll). Not redriven.');
  if (jobs.pipelineResultsQueue) {
    output('PipelineResultsQueueUrl', jobs.pipelineResultsQueue.queueUrl);
  }
  if (jobs.pipelineCallbackQueue) {
    output('PipelineCallbackQueueUrl', jobs.pipelineCallbackQueue.queueUrl,
      'The SqsQueueUrl of a CallbackStep that asks a person through MCP (docs/approvals.md).');
  }
  output('AlarmTopic', jobs.alarmTopicArn, 'The SNS topic the alarms notify (AlarmTopicArn, or the one the stack created).');
  output('AsyncFailureDLQUrl', jobs.asyncFailureDlq.queueUrl, 'Notifications and pipeline events that failed after retries.');
  output('SuccessTopic', jobs.successTopicArn,
    'The endpoint\'s NotificationConfig SuccessTopic (set by the stack with ModelName, else by make wire-endpoint).');
  output('ErrorTopic', jobs.errorTopicArn,
    'The endpoint\'s NotificationConfig ErrorTopic (set by the stack with ModelName, else by make wire-endpoint).');
  output('S3OutputPath', d.s3OutputPath, 'The endpoint\'s S3OutputPath, under the prefix the functions may read.');
  output('S3FailurePath', d.s3FailurePath, 'The endpoint\'s S3FailurePath, under the prefix the functions may read.');
  output('McpToolsCallerPolicyArn', jobs.callerPolicy.ref, 'Attach to IAM callers (AWS_IAM auth) of the MCP server; '
    + 'grants lambda:InvokeFunctionUrl and lambda:InvokeFunction on mcp-tools.');
  if (usesOAuth(s)) {
    output('OAuthIssuerUrl', oauthIssuer ?? s.oauthIssuer,
      'The authorization server whose access tokens mcp-tools accepts (OAUTH_ISSUER).');
    output('ProtectedResourceMetadataUrl', `${jobs.mcpToolsUrl.attrFunctionUrl}.well-known/oauth-protected-resource/mcp`,
      'The MCP server\'s OAuth protected-resource metadata (RFC 9728), where clients find the authorization server.');
  }
  if (jobs.userPool && jobs.userPoolClient && jobs.approverUserPoolClient) {
    output('UserPoolId', jobs.userPool.ref, 'The Cognito user pool; create its users with aws cognito-idp admin-create-user.');
    output('UserPoolClientId', jobs.userPoolClient.ref,
      'The public app client MCP clients sign in with (no secret; give it to Claude Code as --client-id).');
    output('ApproverUserPoolClientId', jobs.approverUserPoolClient.ref,
      'The public app client approvers sign in with (no secret; scope jobs.approve, not jobs.write).');
    output('UserPoolDomainUrl', `https://${s.userPoolDomainPrefix}.auth.${region}.amazoncognito.com`,
      'The managed login domain users sign in at.');
  }
  if (endpointConfig) {
    output('AsyncEndpointConfigName', endpointConfig.attrEndpointConfigName,
      'The EndpointConfig the stack created for AsyncEndpointName.');
  }
}
