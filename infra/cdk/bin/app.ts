#!/usr/bin/env node
/**
 * The construct in a stack of its own, from the template's parameter names given as context:
 *   cdk synth -c AsyncEndpointName=... -c PipelineName=... -c IoBucketName=... [-c stackName=...]
 * (make cdk-synth / make cdk-deploy PARAMS="AsyncEndpointName=... ..."). No env: the stack goes
 * to the account and region of the caller's credentials. The functions are taken from where
 * make build put them (CARGO_TARGET_DIR, relative to the repository, else target/lambda), or
 * from -c functionsDir=....
 */
import { App, Stack } from 'aws-cdk-lib/core';
import { builtFunctionsDir, McpAsyncJobs, McpAsyncJobsProps, PARAMETERS, propsFromParameters } from '../lib';

const DESCRIPTION = 'The async side of SageMaker-backed MCP tools: notification-handler (async inference outcomes), '
  + 'pipeline-router (pipeline run outcomes) and mcp-tools (the MCP server on a Function URL); optionally the same tools '
  + 'as an Amazon Bedrock AgentCore Gateway Lambda target.';

const app = new App();
const context = (key: string): string | undefined => {
  const value: unknown = app.node.tryGetContext(key);
  return value === undefined ? undefined : Array.isArray(value) ? value.join(',') : String(value);
};
const values: Record<string, string> = {};
for (const name of Object.keys(PARAMETERS)) {
  const value = context(name);
  if (value !== undefined) {
    values[name] = value;
  }
}
const stackName = context('stackName') ?? 'mcp-async-jobs';
const stack = new Stack(app, stackName, { description: DESCRIPTION });
try {
  new McpAsyncJobs(stack, 'Jobs', {
    ...(propsFromParameters(values) as unknown as McpAsyncJobsProps),
    // Where make build put them: CARGO_TARGET_DIR honoured, as make serve honours it.
    functionsDir: context('functionsDir') ?? builtFunctionsDir(),
  });
} catch (error) {
  const message = (error as Error).message;
  console.error(message);
  if (/ is required /.test(message)) {
    console.error('The app takes the template\'s parameters as context: cdk synth -c AsyncEndpointName=... '
      + '-c PipelineName=... -c IoBucketName=..., or make cdk-synth PARAMS="AsyncEndpointName=... PipelineName=... '
      + 'IoBucketName=...".');
  }
  process.exit(1);
}
