import { RemovalPolicy } from 'aws-cdk-lib/core';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import { catalogLayerDir } from './catalog';
import { CompletionEvents } from './completion-events';
import { Deployment } from './deployment';
import { logGroup, role, writeLogs } from './functions';
import { allow, decryptOutputs, lineageLists, Statement, tracing } from './policies';
import { given } from './settings';
import { Storage } from './storage';

/**
 * What mcp-tools and gateway-target share: they serve the same tools through the same code,
 * with one role, the same variables and the tool catalog's layer.
 */
export interface Tools {
  readonly role: iam.Role;
  readonly mcpToolsLogs: logs.LogGroup;
  /** Only with agentCoreGatewayId. */
  readonly gatewayTargetLogs?: logs.LogGroup;
  readonly environment: Record<string, string | undefined>;
  /** The tool catalog, at /opt/tool-catalog/<file>; undefined without one. */
  readonly layers?: lambda.ILayerVersion[];
}

// DescribeEndpoint: whether the endpoint is at zero instances when a job is submitted.
const ENDPOINT_ACTIONS = ['sagemaker:InvokeEndpointAsync', 'sagemaker:DescribeEndpoint'];

/** The training tools on these pipelines: start a run; follow, stop and answer it (its CallbackSteps). */
function runPipelines(pipelineArns: string[], executionArns: string[]): Statement[] {
  return [
    allow(['sagemaker:StartPipelineExecution'], pipelineArns),
    allow(['sagemaker:DescribePipelineExecution', 'sagemaker:ListPipelineExecutionSteps',
      'sagemaker:DescribePipelineDefinitionForExecution', 'sagemaker:StopPipelineExecution',
      'sagemaker:SendPipelineExecutionStepSuccess', 'sagemaker:SendPipelineExecutionStepFailure'], executionArns),
  ];
}

export function tools(d: Deployment, storage: Storage, completions: CompletionEvents): Tools {
  const s = d.s;
  const catalog = d.catalog;
  const mcpToolsLogs = logGroup(d, 'McpToolsLogGroup', 'mcp-tools');
  const gatewayTargetLogs = given(s.agentCoreGatewayId) ? logGroup(d, 'GatewayTargetLogGroup', 'gateway-target') : undefined;
  const mcpToolsRole = role(d, 'McpToolsRole', 'mcp-tools', [
    writeLogs(mcpToolsLogs, ...(gatewayTargetLogs ? [gatewayTargetLogs] : [])),
    ...tracing(d),
    allow(['dynamodb:PutItem', 'dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:BatchGetItem'],
      [storage.resultsTable.tableArn]),
    allow(['dynamodb:PutItem', 'dynamodb:Query', 'dynamodb:BatchGetItem'], [storage.pipelineResultsTable.tableArn]),
    // MCP Events (mcp-tools'): events/poll reads an owner's log from a cursor; events/subscribe
    // and events/unsubscribe keep the owner's webhook subscriptions.
    allow(['dynamodb:Query'], [storage.eventsTable.tableArn]),
    allow(['dynamodb:PutItem', 'dynamodb:DeleteItem', 'dynamodb:Query'],
      [storage.subscriptionsTable.tableArn]),
    allow(['s3:PutObject'], [`${d.bucketArn}/inputs/*`]),
    // The inputs it writes under a bucket key: S3 asks KMS for a data key as this role.
    ...(d.bucketKeyArn ? [allow(['kms:GenerateDataKey'], [d.bucketKeyArn])] : []),
    // Presigned result URLs are signed with this role's credentials, and check_job_status
    // reads an output or failure object itself when its notification did not arrive.
    allow(['s3:GetObject'], d.readableOutcomes),
    ...decryptOutputs(d),
    allow(ENDPOINT_ACTIONS, [`${d.sagemakerArn}:endpoint/${s.asyncEndpointName}`]),
    // The training tools, only with a pipeline.
    ...(d.hasPipeline ? runPipelines([d.pipelineArn], [`${d.pipelineArn}/execution/*`]) : []),
    // The tool catalog's endpoints and pipelines beside those, each by name.
    ...(catalog.endpoints.length > 0
      ? [allow(ENDPOINT_ACTIONS, catalog.endpoints.map((e) => `${d.sagemakerArn}:endpoint/${e}`))] : []),
    ...(catalog.pipelines.length > 0 ? runPipelines(d.catalogPipelineArns, d.catalogExecutionArns) : []),
    // get_model_provenance: a model package and the lineage around it;
    // approve_model_package: its approval (the groups are the pipelines' own, unknown here).
    allow(['sagemaker:DescribeModelPackage', 'sagemaker:UpdateModelPackage'], [`${d.sagemakerArn}:model-package/*`]),
    allow(['sagemaker:DescribeArtifact'], [`${d.sagemakerArn}:artifact/*`]),
    lineageLists(),
    // An outcome a status check finds in S3 is announced as a notification's is.
    ...completions.putEvents,
  ]);
  const environment = {
    RESULTS_TABLE: storage.resultsTable.tableName,
    PIPELINE_RESULTS_TABLE: storage.pipelineResultsTable.tableName,
    IO_BUCKET: s.ioBucketName,
    ASYNC_ENDPOINT_NAME: s.asyncEndpointName,
    PIPELINE_NAME: s.pipelineName,
    TOOL_CATALOG: catalog.file ? `/opt/tool-catalog/${catalog.file.fileName}` : '',
    RESULT_TTL_SECS: String(s.resultTtlSecs),
    INLINE_RESULT_MAX_BYTES: String(s.inlineResultMaxBytes),
    PIPELINE_PARAMETERS: s.pipelineParameters,
    DEFAULT_REQUEST_TTL_SECS: String(s.defaultRequestTtlSecs),
    INLINE_INPUT_MAX_BYTES: String(s.inlineInputMaxBytes),
    TRAINING_INPUT_PREFIXES: given(s.trainingInputPrefixes) ? s.trainingInputPrefixes : `s3://${s.ioBucketName}/train/`,
    TRAINING_INSTANCE_TYPES: s.trainingInstanceTypes,
    CALLER_SUBMITS_PER_MINUTE: String(s.callerSubmitsPerMinute),
    CALLER_RUNS_PER_HOUR: String(s.callerRunsPerHour),
    CALLER_WAITS_MAX: String(s.callerWaitsMax),
    CALLER_READS_PER_MINUTE: String(s.callerReadsPerMinute),
    APPROVAL_GATE: String(s.approvalGate),
    APPROVALS_VIA: s.approvalsVia,
    EVENT_BUS_NAME: completions.eventBusName,
  };
  // The tool catalog, at /opt/tool-catalog/<file> in mcp-tools and gateway-target.
  const layers = catalog.file ? [d.add(lambda.LayerVersion, 'ToolCatalogLayer', {
    // Named after the stack: stacks keep their own.
    layerVersionName: `${d.name}-catalog`,
    description: 'The tool catalog (ToolCatalog) mcp-tools and gateway-target read at cold start.',
    code: lambda.Code.fromAsset(catalogLayerDir(catalog.file.fileName, catalog.file.content)),
    compatibleArchitectures: [lambda.Architecture.ARM_64],
    compatibleRuntimes: [lambda.Runtime.PROVIDED_AL2023],
    // A new catalog is a new version; the functions move to it, and nothing else uses the old.
    removalPolicy: RemovalPolicy.DESTROY,
  })] : undefined;
  return { role: mcpToolsRole, mcpToolsLogs, gatewayTargetLogs, environment, layers };
}
