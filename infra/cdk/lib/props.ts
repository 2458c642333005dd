/**
 * The props mirror infra/template.yaml's parameters one to one (`OutputPrefix` is
 * `outputPrefix`, ...), with their defaults; an empty string means "not given", as in the
 * template. Everything is decided at synth time: the template's Conditions are plain branches
 * here, and its Rules and AllowedPatterns are checked when the construct is created.
 */
export interface McpAsyncJobsProps {
  /** The SageMaker asynchronous endpoint submit_job invokes (lowercase, as in its ARN). */
  readonly asyncEndpointName: string;
  /** The SageMaker pipeline trigger_training starts (lowercase, as in its ARN). @default '' (an inference-only stack: no training tools, no pipeline-router) */
  readonly pipelineName?: string;
  /** The existing bucket of the endpoint's inputs and outputs (inputs go to inputs/). */
  readonly ioBucketName: string;
  /** Key prefix of the endpoint's S3OutputPath. @default 'outputs/' */
  readonly outputPrefix?: string;
  /** Key prefix of the endpoint's S3FailurePath. @default 'failures/' */
  readonly failurePrefix?: string;
  /** An existing SNS topic for success notifications. @default - one is created */
  readonly successTopicArn?: string;
  /** An existing SNS topic for error notifications. @default - one is created */
  readonly errorTopicArn?: string;
  /** An existing SageMaker Model: the async endpoint is then created here, wired and scaling to zero. @default - the endpoint exists already */
  readonly modelName?: string;
  /** The endpoint's execution role (a path of at most three levels); the topics created here let it publish. Required with modelName. */
  readonly modelExecutionRoleArn?: string;
  /** With modelName, attach to that role the policy SageMaker needs for this stack's outcomes. @default true */
  readonly attachModelRolePolicy?: boolean;
  /** @default 'ml.m5.large' */
  readonly endpointInstanceType?: string;
  /** @default 1 */
  readonly endpointInitialInstanceCount?: number;
  /** The fewest instances scaling keeps (0 scales to zero). @default 0 */
  readonly endpointMinInstanceCount?: number;
  /** @default 2 */
  readonly endpointMaxInstanceCount?: number;
  /** Queued requests per instance (ApproximateBacklogSizePerInstance) scaling aims at. @default 5 */
  readonly targetBacklogPerInstance?: number;
  /** @default 4 */
  readonly maxConcurrentInvocationsPerInstance?: number;
  /** @default 'AllTraffic' */
  readonly variantName?: string;
  /** A KMS key (its ARN or ID, not an alias) for the endpoint's volume and S3 outputs. @default - none */
  readonly endpointKmsKeyId?: string;
  /** The ARN of the customer managed key of the bucket's default encryption. @default - none */
  readonly ioBucketKmsKeyArn?: string;
  /** trigger_training's arguments mapped to the pipeline's parameter names (tool_arg=Name,...). @default the seed pipeline's names */
  readonly pipelineParameters?: string;
  /**
   * The tool catalog: a path to its JSON file (relative to the repository), or the parsed catalog.
   * The tools are then the catalog's: the file goes in a layer of mcp-tools and gateway-target
   * (TOOL_CATALOG=/opt/tool-catalog/<file name>; catalog.json for a parsed one), and mcp-tools may
   * invoke each endpoint and start each pipeline it names, whose runs are routed. @default - none
   */
  readonly catalog?: string | ToolCatalog;
  /** Endpoints granted beside asyncEndpointName and the catalog's (the template's CatalogEndpointNames). @default [] */
  readonly catalogEndpointNames?: string[];
  /**
   * A SageMaker Model for each of the catalog's endpoints (the catalog's, then catalogEndpointNames),
   * in their order: the construct creates that endpoint from it as it creates modelName's; an empty
   * place leaves that endpoint to exist already. At most 10. @default []
   */
  readonly catalogModelNames?: string[];
  /** Pipelines granted and routed beside pipelineName and the catalog's (CatalogPipelineNames); they need pipelineName. @default [] */
  readonly catalogPipelineNames?: string[];
  /** Deliver notifications through an SQS buffer queue (with a DLQ) instead of directly from SNS. @default false */
  readonly useSqsBuffer?: boolean;
  /** With useSqsBuffer, the most notifications one invocation records; above 10 needs a batching window. @default 10 */
  readonly sqsBatchSize?: number;
  /** With useSqsBuffer, seconds Lambda may gather a batch before invoking. @default 0 */
  readonly sqsBatchingWindowSecs?: number;
  /** Route only PipelineName's status changes. @default true */
  readonly narrowEventsToPipeline?: boolean;
  /** @default 3600 */
  readonly resultTtlSecs?: number;
  /** @default 4096 */
  readonly inlineResultMaxBytes?: number;
  /** AWS_IAM (SigV4 callers) or NONE (the function checks a bearer or OAuth token). @default 'AWS_IAM' */
  readonly functionUrlAuthType?: 'AWS_IAM' | 'NONE';
  /** With NONE and no OAuth: the hex SHA-256 of a bearer token (caller `default`). */
  readonly bearerTokenSha256?: string;
  /** With NONE and no OAuth: named bearer tokens, name:sha256hex,... */
  readonly bearerTokens?: string;
  /** An OAuth issuer (https://...): mcp-tools accepts only its access tokens. Needs NONE. */
  readonly oauthIssuer?: string;
  /** With OAuth, this resource's identifier (normally its public MCP URL). @default https://<Host>/mcp */
  readonly oauthAudience?: string;
  /** @default - from the issuer's metadata */
  readonly oauthJwksUri?: string;
  /** @default 'jobs:read' (in the function) */
  readonly oauthReadScope?: string;
  /** @default 'jobs:write' (in the function) */
  readonly oauthWriteScope?: string;
  /**
   * The scope answering a run's questions and deciding its model needs (tasks/update,
   * answer_training_input, approve_model_package): the approvers' clients', not agents'.
   * @default 'jobs:approve' (in the function)
   */
  readonly oauthApproveScope?: string;
  /** Client ids whose tokens are accepted without aud (as Cognito's are), comma-separated. */
  readonly oauthClientIds?: string;
  /** Create a Cognito user pool as the authorization server. Needs NONE and userPoolDomainPrefix. @default false */
  readonly createUserPool?: boolean;
  /** With createUserPool, the managed login domain's prefix. */
  readonly userPoolDomainPrefix?: string;
  /** With createUserPool, the app clients' redirect URLs. @default ['http://localhost:3030/callback'] */
  readonly oauthCallbackUrls?: string[];
  /**
   * Announce each recorded job outcome on EventBridge (source mcp.async-jobs): not at all, on the
   * account's default bus, or on a bus the construct creates. @default 'none'
   */
  readonly completionEvents?: 'none' | 'default-bus' | 'stack-bus';
  /** An https URL each completion event is POSTed to (an API destination). @default '' (none) */
  readonly completionWebhookUrl?: string;
  /** The header the webhook's key is sent in. @default 'x-api-key' */
  readonly completionWebhookApiKeyName?: string;
  /**
   * The Secrets Manager secret (name or ARN) holding the webhook's key, read at deploy through a
   * dynamic reference; required with completionWebhookUrl. @default '' (none)
   */
  readonly completionWebhookApiKeySecret?: string;
  /**
   * mcp-tools' timeout in seconds: a check that asks for progress may wait this long less 10 s,
   * its notifications streamed (a plain call waits 20 s at most). @default 120
   */
  readonly toolsTimeoutSecs?: number;
  /** Browser origins allowed to call the MCP server, comma-separated. @default '' (none) */
  readonly allowedOrigins?: string;
  /**
   * Who may answer a run's questions and approve or reject the models it registers,
   * comma-separated, named as callers authenticate (IAM ARNs, bearer token names, OAuth subjects).
   * @default '' (each run's owner)
   */
  readonly approvers?: string;
  /**
   * A run that registers a model waiting for approval is not done until someone approves or
   * rejects it; its task asks for the decision. @default false
   */
  readonly approvalGate?: boolean;
  /**
   * How a run's questions and its model's approval may be answered: through the client's form
   * (tasks/update) or the tools answer_training_input and approve_model_package (`any`), or
   * through the client's form only (`elicitation`: the two tools are not served, so a model
   * cannot answer by calling them). @default 'any'
   */
  readonly approvalsVia?: 'any' | 'elicitation';
  /** @default 30 */
  readonly logRetentionDays?: number;
  /** An existing SNS topic for alarm notifications. @default - a topic is created */
  readonly alarmTopicArn?: string;
  /** Without alarmTopicArn, an e-mail address subscribed to the created alarm topic. @default - none */
  readonly alarmEmail?: string;
  /** @default 'INFO' */
  readonly applicationLogLevel?: 'TRACE' | 'DEBUG' | 'INFO' | 'WARN' | 'ERROR' | 'FATAL';
  /** @default 'WARN' */
  readonly systemLogLevel?: 'DEBUG' | 'INFO' | 'WARN';
  /** @default 'PassThrough' */
  readonly tracingMode?: 'Active' | 'PassThrough';
  /** Share of job outcomes that are failures (15 minutes, at least 5) that raises the alarm. @default 0.2 */
  readonly failureRateThreshold?: number;
  /** submit_job's request_ttl_secs when a caller gives none. @default 3600 */
  readonly defaultRequestTtlSecs?: number;
  /** The largest job input sent inline (0: every input through S3). @default 128000 */
  readonly inlineInputMaxBytes?: number;
  /** Where trigger_training's input_data_uri may point (s3://bucket/prefix/,...). @default '' (s3://<ioBucketName>/train/) */
  readonly trainingInputPrefixes?: string;
  /** The training_instance_type values trigger_training accepts, comma-separated. @default 'ml.m5.xlarge' */
  readonly trainingInstanceTypes?: string;
  /** Jobs one caller may submit per minute (0: no quota). @default 60 */
  readonly callerSubmitsPerMinute?: number;
  /** Training runs one caller may start per hour (0: no quota). @default 10 */
  readonly callerRunsPerHour?: number;
  /** Long waits one caller may hold at once (0: no quota). @default 4 */
  readonly callerWaitsMax?: number;
  /** Reads (status checks, provenance, resources/read, tasks/get) one caller may make per minute (0: no quota). @default 600 */
  readonly callerReadsPerMinute?: number;
  /** Concurrent executions reserved for mcp-tools (0: none). @default 0 */
  readonly toolsReservedConcurrency?: number;
  /** An AgentCore Gateway: the tools are then also deployed as its Lambda target. */
  readonly agentCoreGatewayId?: string;
  /** With agentCoreGatewayId, the Gateway's execution role (allowed to invoke the target). */
  readonly agentCoreGatewayRoleArn?: string;
  /** @default 'mcp-tools' */
  readonly agentCoreTargetName?: string;

  // What the template gets from elsewhere.

  /** Where the functions are built, one `<binary>/bootstrap` each (make build). @default <repository>/target/lambda */
  readonly functionsDir?: string;
  /** The Gateway target's tool schema (make tool-schema). @default <repository>/infra/gateway-tool-schema.json */
  readonly toolSchemaFile?: string;
  /** The prefix of physical names (log groups, dashboard, metrics namespace; CloudFormation names the functions). @default the stack's name (AWS::StackName) */
  readonly namePrefix?: string;
  /** Prepended to every logical id, which are otherwise the template's (for two of these in one stack). @default '' */
  readonly logicalIdPrefix?: string;
}

/**
 * A tool catalog as mcp-tools reads it (TOOL_CATALOG). Only the names the wiring needs are typed
 * here; mcp-tools' check-catalog checks the rest (make catalog runs it).
 */
export interface ToolCatalog {
  readonly async_tools?: ReadonlyArray<{ readonly name: string; readonly endpoint: string; readonly [field: string]: unknown }>;
  readonly pipeline_tools?: ReadonlyArray<{ readonly name: string; readonly pipeline: string; readonly [field: string]: unknown }>;
}
