import { CfnOutput } from 'aws-cdk-lib/core';
import * as sagemaker from 'aws-cdk-lib/aws-sagemaker';
import { Deployment } from './deployment';
import type { McpAsyncJobs } from './mcp-async-jobs';
import { usesOAuth } from './settings';

/** The template's Outputs, under its names (and the logical id prefix). */
export function outputs(d: Deployment, jobs: McpAsyncJobs, oauthIssuer: string | undefined,
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
  if (jobs.userPool && jobs.userPoolClient) {
    output('UserPoolId', jobs.userPool.ref, 'The Cognito user pool; create its users with aws cognito-idp admin-create-user.');
    output('UserPoolClientId', jobs.userPoolClient.ref,
      'The public app client MCP clients sign in with (no secret; give it to Claude Code as --client-id).');
    output('UserPoolDomainUrl', `https://${s.userPoolDomainPrefix}.auth.${region}.amazoncognito.com`,
      'The managed login domain users sign in at.');
  }
  if (endpointConfig) {
    output('AsyncEndpointConfigName', endpointConfig.attrEndpointConfigName,
      'The EndpointConfig the stack created for AsyncEndpointName.');
  }
}
