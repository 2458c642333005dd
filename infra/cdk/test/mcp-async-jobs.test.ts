/**
 * The construct on its own terms, offline (aws-cdk-lib/assertions). That it deploys what the SAM
 * template deploys, case by case, is tests/infra/test_cdk_parity.py's part.
 */
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { App, CfnParameter, Stack } from 'aws-cdk-lib/core';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { McpAsyncJobs, McpAsyncJobsProps } from '../lib';

const PACKAGE = path.resolve(__dirname, '..', '..');
const BINARIES = ['notification-handler', 'pipeline-router', 'mcp-tools', 'gateway-target', 'event-delivery'];
const REQUIRED = { asyncEndpointName: 'doc-processor-async', pipelineName: 'intent-classifier', ioBucketName: 'mcp-io-bucket' };
const ROLE = 'arn:aws:iam::123456789012:role/gateway';

// The functions' builds are not needed to synthesize: a stub bootstrap stands in for each.
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-cdk-test-'));
const functionsDir = path.join(work, 'functions');
for (const binary of BINARIES) {
  fs.mkdirSync(path.join(functionsDir, binary), { recursive: true });
  fs.writeFileSync(path.join(functionsDir, binary, 'bootstrap'), '#!/bin/sh\n');
}
after(() => fs.rmSync(work, { recursive: true, force: true }));

function stackWith(props: Partial<McpAsyncJobsProps> = {}, context: Record<string, unknown> = {}): Stack {
  const app = new App({ outdir: fs.mkdtempSync(path.join(work, 'out-')), context, builtinCloudFormationValidation: false });
  const stack = new Stack(app, 'mcp-jobs');
  new McpAsyncJobs(stack, 'Jobs', { ...REQUIRED, functionsDir, ...props });
  return stack;
}

function synth(props: Partial<McpAsyncJobsProps> = {}): Template {
  return Template.fromStack(stackWith(props));
}

describe('McpAsyncJobs', () => {
  it('deploys the functions from their builds: provided.al2023, arm64, bootstrap', () => {
    const template = synth();
    template.resourceCountIs('AWS::Lambda::Function', 4);
    // CloudFormation names the functions, so a stack name of any length deploys.
    for (const fnResource of Object.values(template.findResources('AWS::Lambda::Function'))) {
      assert.equal((fnResource as { Properties: Record<string, unknown> }).Properties.FunctionName, undefined);
    }
    for (const binary of ['notification-handler', 'pipeline-router', 'mcp-tools', 'event-delivery']) {
      template.hasResourceProperties('AWS::Lambda::Function', {
        LoggingConfig: { LogGroup: { Ref: `${binary.split('-').map((w) => w[0].toUpperCase() + w.slice(1)).join('')}LogGroup` } },
        Runtime: 'provided.al2023',
        Architectures: ['arm64'],
        Handler: 'bootstrap',
        MemorySize: 128,
        TracingConfig: { Mode: 'PassThrough' },
      });
      template.hasResourceProperties('AWS::Lambda::Function', {
        LoggingConfig: { LogFormat: 'JSON', ApplicationLogLevel: 'INFO', SystemLogLevel: 'WARN' },
      });
    }
  });

  it('keeps the template\'s logical ids, and a prefix on them when asked', () => {
    const ids = Object.keys(synth().toJSON().Resources);
    for (const id of ['ResultsTable', 'NotificationHandlerFunction', 'McpToolsFunctionUrl', 'Dashboard', 'JobFailureRateAlarm']) {
      assert.ok(ids.includes(id), `${id} missing from ${ids.join(', ')}`);
    }
    const app = new App({ outdir: fs.mkdtempSync(path.join(work, 'out-')), builtinCloudFormationValidation: false });
    const stack = new Stack(app, 'two');
    new McpAsyncJobs(stack, 'Blue', { ...REQUIRED, functionsDir, logicalIdPrefix: 'Blue', namePrefix: 'jobs-blue' });
    new McpAsyncJobs(stack, 'Green', { ...REQUIRED, functionsDir, logicalIdPrefix: 'Green', namePrefix: 'jobs-green' });
    const both = Template.fromStack(stack);
    both.resourceCountIs('AWS::DynamoDB::Table', 8);
    both.hasResourceProperties('AWS::Logs::LogGroup', { LogGroupName: '/aws/lambda/jobs-green-mcp-tools' });
    assert.ok(Object.keys(both.toJSON().Resources).includes('BlueResultsTable'));
    assert.ok(Object.keys(both.toJSON().Outputs).includes('GreenMcpFunctionUrl'));
    // Queue names are the account's and region's, not the stack's: each construct has its own.
    const names = Object.values(both.findResources('AWS::SQS::Queue', { Properties: { FifoQueue: true } }))
      .map((q) => JSON.stringify((q as { Properties: { QueueName: unknown } }).Properties.QueueName));
    assert.equal(names.length, 4);
    assert.equal(new Set(names).size, 4);
    assert.ok(names.some((n) => n.includes('mcp-event-delivery-Blue-')), names.join(' '));
  });

  it('queues MCP Events\' deliveries in order (FIFO) with a DLQ, and keeps the webhooks\' secrets under KMS', () => {
    const template = synth();
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      KeySchema: [{ AttributeName: 'owner', KeyType: 'HASH' }, { AttributeName: 'id', KeyType: 'RANGE' }],
      SSESpecification: { SSEEnabled: true, SSEType: 'KMS' },
      TimeToLiveSpecification: { AttributeName: 'ttl', Enabled: true },
    });
    template.hasResourceProperties('AWS::SQS::Queue', {
      FifoQueue: true, ContentBasedDeduplication: false, VisibilityTimeout: 360, MessageRetentionPeriod: 345600,
      RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': ['EventDeliveryDLQ', 'Arn'] }, maxReceiveCount: 20 },
      QueueName: { 'Fn::Join': ['', ['mcp-event-delivery-',
        { 'Fn::Select': [2, { 'Fn::Split': ['/', { Ref: 'AWS::StackId' }] }] }, '.fifo']] },
    });
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::GetAtt': ['EventDeliveryQueue', 'Arn'] }, BatchSize: 10,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    assert.throws(() => synth({ logicalIdPrefix: 'AVeryLongPrefixIndeed' }), /logicalIdPrefix "AVeryLongPrefixIndeed" is too long/);
  });

  it('takes a delivery\'s first try from the events table\'s stream, and records the batches given up on', () => {
    const template = synth();
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      KeySchema: [{ AttributeName: 'owner', KeyType: 'HASH' }, { AttributeName: 'position', KeyType: 'RANGE' }],
      StreamSpecification: { StreamViewType: 'NEW_IMAGE' },
    });
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::GetAtt': ['EventsTable', 'StreamArn'] },
      StartingPosition: 'LATEST',
      FilterCriteria: { Filters: [{ Pattern: '{"eventName":["INSERT"],"dynamodb":{"NewImage":{"webhooks":{"BOOL":[true]}}}}' }] },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BisectBatchOnFunctionError: true,
      DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': ['EventStreamFailureQueue', 'Arn'] } } },
    });
    template.hasResourceProperties('AWS::SQS::Queue', { SqsManagedSseEnabled: true, MessageRetentionPeriod: 1209600 });
    assert.equal(template.toJSON().Resources.EventStreamFailureQueue.Properties.QueueName, undefined);
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'IteratorAge', Threshold: 60000 });
  });

  it('keeps the tables when the stack goes (not after a failed first create), and nothing else', () => {
    const template = synth();
    template.allResources('AWS::DynamoDB::Table', { DeletionPolicy: 'RetainExceptOnCreate', UpdateReplacePolicy: 'Retain' });
    template.allResources('AWS::Logs::LogGroup', { DeletionPolicy: 'Delete' });
    template.allResources('AWS::SQS::Queue', { DeletionPolicy: 'Delete' });
  });

  it('grants X-Ray only with active tracing', () => {
    const xray = Match.arrayWith([Match.objectLike({ Action: ['xray:PutTraceSegments', 'xray:PutTelemetryRecords'] })]);
    const granted = (template: Template) => Object.values(template.findResources('AWS::IAM::Role', {
      Properties: { Policies: [{ PolicyDocument: { Statement: xray } }] },
    })).length;
    assert.equal(granted(synth()), 0);
    const active = synth({ tracingMode: 'Active' });
    assert.equal(granted(active), 4);
    active.allResourcesProperties('AWS::Lambda::Function', { TracingConfig: { Mode: 'Active' } });
  });

  it('adds the Gateway target with the exported tool schema', () => {
    const template = synth({ agentCoreGatewayId: 'gw-1234567890', agentCoreGatewayRoleArn: ROLE });
    template.resourceCountIs('AWS::Lambda::Function', 5);
    const schema = JSON.parse(fs.readFileSync(path.join(PACKAGE, '..', 'gateway-tool-schema.json'), 'utf8'));
    template.hasResourceProperties('AWS::BedrockAgentCore::GatewayTarget', {
      GatewayIdentifier: 'gw-1234567890',
      TargetConfiguration: { Mcp: { Lambda: { ToolSchema: { InlinePayload: Match.arrayWith([
        Match.objectLike({ Name: schema[0].name, Description: schema[0].description }),
      ]) } } } },
    });
    const target = template.toJSON().Resources.GatewayTarget;
    assert.equal(target.Properties.TargetConfiguration.Mcp.Lambda.ToolSchema.InlinePayload.length, schema.length);
    assert.deepEqual(target.DependsOn, ['GatewayTargetInvokePermission']);
  });

  it('refuses what the template\'s rules and patterns refuse, naming the prop', () => {
    assert.throws(() => synth({ functionUrlAuthType: 'NONE' }), /BearerTokenForUrlAuthNone: .*bearerTokenSha256/);
    assert.throws(() => synth({ oauthIssuer: 'https://login.example.com' }), /UrlAuthNoneForOAuth/);
    assert.throws(() => synth({ functionUrlAuthType: 'NONE', createUserPool: true }), /DomainPrefixForUserPool/);
    assert.throws(() => synth({ modelName: 'm' }), /ExecutionRoleForEndpoint/);
    assert.throws(() => synth({ agentCoreGatewayId: 'gw-1234567890' }), /GatewayRoleForGatewayTarget/);
    assert.throws(() => synth({ asyncEndpointName: 'Doc_Processor' }), /asyncEndpointName "Doc_Processor" does not match/);
    assert.throws(() => synth({ oauthIssuer: 'http://login.example.com', functionUrlAuthType: 'NONE' }), /oauthIssuer/);
    assert.throws(() => synth({ logRetentionDays: 42 }), /logRetentionDays 42 is not one of/);
    assert.throws(() => synth({ maxConcurrentInvocationsPerInstance: 0 }), /is below 1/);
    assert.throws(() => synth({ asyncEndpointName: undefined }), /asyncEndpointName is required/);
    // What the tools would refuse at cold start, refused here (lookaheads and back-references).
    for (const bad of ['input_data_uri=A,max_epochs=A', 'max_epochs=E', 'input_data_uri=A,input_data_uri=B',
      'input_data_uri=A,learning_rate=L']) {
      assert.throws(() => synth({ pipelineParameters: bad }), /pipelineParameters .* does not match/, bad);
    }
    synth({ pipelineParameters: 'max_epochs=Epochs,input_data_uri=Data' });
    assert.throws(() => synth({ endpointKmsKeyId: 'alias/ml' }), /endpointKmsKeyId "alias\/ml" does not match/);
    assert.throws(() => synth({ modelExecutionRoleArn: 'arn:aws:iam::123456789012:role/a/b/c/d/r', modelName: 'm' }),
      /modelExecutionRoleArn/);
  });

  it('gives the approvers an app client of their own: jobs.approve is theirs, not the agents\'', () => {
    const cognito: Partial<McpAsyncJobsProps> = { functionUrlAuthType: 'NONE', createUserPool: true, userPoolDomainPrefix: 'acme' };
    const template = synth(cognito);
    const resources = template.toJSON().Resources;
    assert.deepEqual(resources.UserPoolClient.Properties.AllowedOAuthScopes, ['openid', 'mcp-tools/jobs.read', 'mcp-tools/jobs.write']);
    assert.deepEqual(resources.ApproverUserPoolClient.Properties.AllowedOAuthScopes,
      ['openid', 'mcp-tools/jobs.read', 'mcp-tools/jobs.approve']);
    // Managed login shows its pages only for a client with a style: each client has one.
    template.resourceCountIs('AWS::Cognito::ManagedLoginBranding', 2);
    template.hasResourceProperties('AWS::Cognito::ManagedLoginBranding', { ClientId: { Ref: 'ApproverUserPoolClient' } });
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({
        OAUTH_APPROVE_SCOPE: 'mcp-tools/jobs.approve',
        OAUTH_CLIENT_IDS: { 'Fn::Join': ['', [{ Ref: 'UserPoolClient' }, ',', { Ref: 'ApproverUserPoolClient' }]] },
        APPROVALS_VIA: 'any',
      }) },
    });
    assert.deepEqual(template.toJSON().Outputs.ApproverUserPoolClientId.Value, { Ref: 'ApproverUserPoolClient' });
    assert.throws(() => synth({ ...cognito, oauthApproveScope: 'jobs:approve' }), /DomainPrefixForUserPool: .*oauthApproveScope/);
    synth({ approvalsVia: 'elicitation' }).hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ APPROVALS_VIA: 'elicitation' }) },
    });
    assert.throws(() => synth({ approvalsVia: 'tools' as 'any' }), /approvalsVia "tools" is not one of any, elicitation/);
  });

  it('deploys an inference-only stack without a pipeline name', () => {
    const template = synth({ pipelineName: undefined });
    template.resourceCountIs('AWS::Events::Rule', 0);
    template.resourceCountIs('AWS::Lambda::Function', 3);
    template.resourceCountIs('AWS::DynamoDB::Table', 4);
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: { PIPELINE_NAME: '', TRAINING_INPUT_PREFIXES: 's3://mcp-io-bucket/train/' } },
    });
  });

  it('takes tokens (CloudFormation parameters of the enclosing stack) without checking them', () => {
    const app = new App({ outdir: fs.mkdtempSync(path.join(work, 'out-')), builtinCloudFormationValidation: false });
    const stack = new Stack(app, 'tokens');
    const endpoint = new CfnParameter(stack, 'Endpoint').valueAsString;
    new McpAsyncJobs(stack, 'Jobs', { ...REQUIRED, functionsDir, asyncEndpointName: endpoint });
    Template.fromStack(stack).hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ ASYNC_ENDPOINT_NAME: { Ref: 'Endpoint' } }) },
    });
  });

  it('says how to build the functions when their code is missing', () => {
    assert.throws(() => synth({ functionsDir: path.join(work, 'nowhere') }), /bootstrap is missing: build the functions first \(make build\)/);
  });

  it('synthesizes the same template whatever feature flags the app sets', () => {
    const recommended = JSON.parse(fs.readFileSync(require.resolve('aws-cdk-lib/recommended-feature-flags.json'), 'utf8'));
    const props: Partial<McpAsyncJobsProps> = {
      modelName: 'm', modelExecutionRoleArn: ROLE, useSqsBuffer: true, tracingMode: 'Active',
      functionUrlAuthType: 'NONE', createUserPool: true, userPoolDomainPrefix: 'acme',
      agentCoreGatewayId: 'gw-1234567890', agentCoreGatewayRoleArn: ROLE,
    };
    const plain = Template.fromStack(stackWith(props)).toJSON();
    const flagged = Template.fromStack(stackWith(props, recommended)).toJSON();
    assert.deepEqual(flagged.Resources, plain.Resources);
    assert.deepEqual(flagged.Outputs, plain.Outputs);
  });

  // cdk.json turns the app's validation findings into errors (@aws-cdk/core:validateAgainstDefaultRules).
  it('synthesizes through the CDK CLI, with its CloudFormation validation on', () => {
    const out = fs.mkdtempSync(path.join(work, 'cli-'));
    const cdk = path.join(PACKAGE, 'node_modules', 'aws-cdk', 'bin', 'cdk');
    const context = ['AsyncEndpointName=doc-processor-async', 'PipelineName=intent-classifier', 'IoBucketName=mcp-io-bucket',
      'ModelName=doc-classifier', `ModelExecutionRoleArn=${ROLE}`, 'FunctionUrlAuthType=NONE', 'CreateUserPool=true',
      'UserPoolDomainPrefix=acme-mcp-jobs', `functionsDir=${functionsDir}`, 'stackName=cli-synth'];
    const env: NodeJS.ProcessEnv = { ...process.env, CDK_DISABLE_CLI_TELEMETRY: 'true' };
    delete env.CDK_VALIDATION;
    const run = spawnSync(process.execPath, [cdk, 'synth', '--no-notices', '--no-lookups', '--quiet', '-o', out,
      ...context.flatMap((c) => ['-c', c])], { cwd: PACKAGE, env, encoding: 'utf8' });
    assert.equal(run.status, 0, `cdk synth failed:\n${run.stdout}\n${run.stderr}`);
    const report = JSON.parse(fs.readFileSync(path.join(out, 'validation-report.json'), 'utf8'));
    assert.deepEqual(report.pluginReports.flatMap((r: { violations?: unknown[] }) => r.violations ?? []), []);
    const template = JSON.parse(fs.readFileSync(path.join(out, 'cli-synth.template.json'), 'utf8'));
    assert.ok(template.Resources.UserPool && template.Resources.AsyncEndpoint);
    assert.equal(template.Resources.McpToolsFunctionUrl.Properties.AuthType, 'NONE');
  });

  it('the app takes the functions from where make build put them, CARGO_TARGET_DIR honoured', () => {
    const app = (env: Record<string, string>) => spawnSync(process.execPath, [path.join(PACKAGE, 'dist', 'bin', 'app.js')], {
      cwd: PACKAGE, encoding: 'utf8',
      env: { ...process.env, CDK_CONTEXT_JSON: JSON.stringify({ AsyncEndpointName: 'doc-processor-async', PipelineName: 'intent-classifier', IoBucketName: 'mcp-io-bucket' }), ...env },
    });
    // Built under a target dir of its own: <CARGO_TARGET_DIR>/lambda/<binary>/bootstrap.
    const target = path.join(work, 'cargo-target');
    for (const binary of BINARIES) {
      fs.mkdirSync(path.join(target, 'lambda', binary), { recursive: true });
      fs.writeFileSync(path.join(target, 'lambda', binary, 'bootstrap'), '#!/bin/sh\n');
    }
    const built = app({ CARGO_TARGET_DIR: target });
    assert.equal(built.status, 0, built.stderr);
    // Elsewhere, it names where it looked; a relative one is the repository's, as cargo's is there.
    const missing = app({ CARGO_TARGET_DIR: path.join(work, 'not-built') });
    assert.equal(missing.status, 1);
    assert.match(missing.stderr, new RegExp(`${path.join(work, 'not-built', 'lambda')}/\\S+/bootstrap is missing`));
    const relative = app({ CARGO_TARGET_DIR: 'elsewhere-target' });
    assert.equal(relative.status, 1);
    assert.match(relative.stderr, new RegExp(`${path.resolve(PACKAGE, '..', '..', 'elsewhere-target', 'lambda')}/`));
  });

  it('the app names what it needs when parameters are missing', () => {
    const run = spawnSync(process.execPath, [path.join(PACKAGE, 'dist', 'bin', 'app.js')], {
      cwd: PACKAGE, encoding: 'utf8', env: { ...process.env, CDK_CONTEXT_JSON: JSON.stringify({ functionsDir }) },
    });
    assert.equal(run.status, 1);
    assert.match(run.stderr, /asyncEndpointName is required \(the template's AsyncEndpointName\)/);
    assert.match(run.stderr, /make cdk-synth PARAMS=/);
  });
});
