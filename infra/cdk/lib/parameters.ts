/**
 * The SAM template's parameters, one entry each, with the construct prop it becomes and the
 * constraints the template puts on it. The construct takes its defaults and checks from here,
 * and the parity test compares this table with the template's Parameters, so a parameter added
 * to (or changed in) one and not the other fails a test.
 */

export type ParameterKind = 'string' | 'number' | 'boolean' | 'list';

export interface ParameterSpec {
  /** The McpAsyncJobs prop. */
  readonly prop: string;
  readonly kind: ParameterKind;
  /** The template's Default, as CloudFormation spells it; no default: the prop is required. */
  readonly default?: string;
  readonly pattern?: string;
  readonly allowed?: readonly string[];
  readonly min?: number;
  readonly max?: number;
}

const ROLE_ARN = '^(arn:aws[a-zA-Z-]*:iam::[0-9]{12}:role/.+)?$';
/** A role ARN whose name the template can find: a path of at most three levels. */
const MODEL_ROLE_ARN = '^(arn:aws[a-zA-Z-]*:iam::[0-9]{12}:role/([\\w+=,.@-]+/){0,3}[\\w+=,.@-]{1,64})?$';
const KMS_KEY_ARN = 'arn:aws[a-zA-Z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/[a-zA-Z0-9-]{1,64}';
const TRAINING_ARGUMENT = '(?:input_data_uri|max_epochs|accuracy_threshold|training_instance_type)=[A-Za-z0-9_-]{1,256}';
const S3_PREFIX = 's3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/([^,\\s]+/)?';
const INSTANCE_TYPE = 'ml\\.[a-z0-9]+\\.[a-z0-9]+';
const HTTPS_URL = '^(https://[^\\s]+)?$';
const SCOPE = '^[!#-\\[\\]-~]*$';
const BOOLEAN = ['true', 'false'];

export const PARAMETERS: Readonly<Record<string, ParameterSpec>> = {
  AsyncEndpointName: { prop: 'asyncEndpointName', kind: 'string', pattern: '^[a-z0-9](-*[a-z0-9]){0,62}$' },
  PipelineName: { prop: 'pipelineName', kind: 'string', default: '', pattern: '^([a-z0-9](-*[a-z0-9]){0,255})?$' },
  IoBucketName: { prop: 'ioBucketName', kind: 'string', pattern: '^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$' },
  OutputPrefix: { prop: 'outputPrefix', kind: 'string', default: 'outputs/' },
  FailurePrefix: { prop: 'failurePrefix', kind: 'string', default: 'failures/' },
  SuccessTopicArn: { prop: 'successTopicArn', kind: 'string', default: '' },
  ErrorTopicArn: { prop: 'errorTopicArn', kind: 'string', default: '' },
  ModelName: { prop: 'modelName', kind: 'string', default: '', pattern: '^([a-zA-Z0-9](-*[a-zA-Z0-9]){0,62})?$' },
  ModelExecutionRoleArn: { prop: 'modelExecutionRoleArn', kind: 'string', default: '', pattern: MODEL_ROLE_ARN },
  AttachModelRolePolicy: { prop: 'attachModelRolePolicy', kind: 'boolean', default: 'true', allowed: BOOLEAN },
  EndpointInstanceType: {
    prop: 'endpointInstanceType', kind: 'string', default: 'ml.m5.large', pattern: '^ml\\.[a-z0-9]+\\.[a-z0-9]+$',
  },
  EndpointInitialInstanceCount: { prop: 'endpointInitialInstanceCount', kind: 'number', default: '1', min: 1, max: 100 },
  EndpointMinInstanceCount: { prop: 'endpointMinInstanceCount', kind: 'number', default: '0', min: 0, max: 100 },
  EndpointMaxInstanceCount: { prop: 'endpointMaxInstanceCount', kind: 'number', default: '2', min: 1, max: 100 },
  TargetBacklogPerInstance: { prop: 'targetBacklogPerInstance', kind: 'number', default: '5', min: 1 },
  MaxConcurrentInvocationsPerInstance: {
    prop: 'maxConcurrentInvocationsPerInstance', kind: 'number', default: '4', min: 1, max: 1000,
  },
  VariantName: { prop: 'variantName', kind: 'string', default: 'AllTraffic', pattern: '^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$' },
  EndpointKmsKeyId: { prop: 'endpointKmsKeyId', kind: 'string', default: '', pattern: `^(${KMS_KEY_ARN}|[a-zA-Z0-9-]{1,64})?$` },
  IoBucketKmsKeyArn: { prop: 'ioBucketKmsKeyArn', kind: 'string', default: '', pattern: `^(${KMS_KEY_ARN})?$` },
  PipelineParameters: {
    prop: 'pipelineParameters', kind: 'string',
    default: 'input_data_uri=InputDataUri,max_epochs=MaxEpochs,accuracy_threshold=AccuracyThreshold,'
      + 'training_instance_type=TrainingInstanceType',
    // What mcp-tools would refuse: an unknown or repeated argument, a name twice, input_data_uri missing.
    pattern: '^(?=(?:.*,)?input_data_uri=)(?!(?:.*,)?([a-z_]+)=.*,\\1=)(?!.*=([A-Za-z0-9_-]+),(?:.*,)?[a-z_]+=\\2(?:,|$))'
      + `${TRAINING_ARGUMENT}(?:,${TRAINING_ARGUMENT})*$`,
  },
  // The catalog itself (a path, or its parsed JSON) where the template takes its file's name.
  ToolCatalog: { prop: 'catalog', kind: 'string', default: '', pattern: '^([A-Za-z0-9][A-Za-z0-9._-]{0,127})?$' },
  CatalogEndpointNames: { prop: 'catalogEndpointNames', kind: 'list', default: '', pattern: '^([a-z0-9](-*[a-z0-9]){0,62})?$' },
  CatalogModelNames: { prop: 'catalogModelNames', kind: 'list', default: '', pattern: '^([a-zA-Z0-9](-*[a-zA-Z0-9]){0,62})?$' },
  CatalogPipelineNames: { prop: 'catalogPipelineNames', kind: 'list', default: '', pattern: '^([a-z0-9](-*[a-z0-9]){0,255})?$' },
  UseSqsBuffer: { prop: 'useSqsBuffer', kind: 'boolean', default: 'false', allowed: BOOLEAN },
  SqsBatchSize: { prop: 'sqsBatchSize', kind: 'number', default: '10', min: 1, max: 1000 },
  SqsBatchingWindowSecs: { prop: 'sqsBatchingWindowSecs', kind: 'number', default: '0', min: 0, max: 60 },
  NarrowEventsToPipeline: { prop: 'narrowEventsToPipeline', kind: 'boolean', default: 'true', allowed: BOOLEAN },
  ResultTtlSecs: { prop: 'resultTtlSecs', kind: 'number', default: '3600', min: 60, max: 31536000 },
  InlineResultMaxBytes: { prop: 'inlineResultMaxBytes', kind: 'number', default: '4096', min: 0, max: 262144 },
  FunctionUrlAuthType: { prop: 'functionUrlAuthType', kind: 'string', default: 'AWS_IAM', allowed: ['AWS_IAM', 'NONE'] },
  BearerTokenSha256: { prop: 'bearerTokenSha256', kind: 'string', default: '', pattern: '^([0-9a-f]{64})?$' },
  BearerTokens: {
    prop: 'bearerTokens', kind: 'string', default: '',
    pattern: '^([A-Za-z0-9._-]{1,64}:[0-9a-f]{64}(,[A-Za-z0-9._-]{1,64}:[0-9a-f]{64})*)?$',
  },
  OAuthIssuer: { prop: 'oauthIssuer', kind: 'string', default: '', pattern: HTTPS_URL },
  OAuthAudience: { prop: 'oauthAudience', kind: 'string', default: '', pattern: HTTPS_URL },
  OAuthJwksUri: { prop: 'oauthJwksUri', kind: 'string', default: '', pattern: HTTPS_URL },
  OAuthReadScope: { prop: 'oauthReadScope', kind: 'string', default: '', pattern: SCOPE },
  OAuthWriteScope: { prop: 'oauthWriteScope', kind: 'string', default: '', pattern: SCOPE },
  OAuthApproveScope: { prop: 'oauthApproveScope', kind: 'string', default: '', pattern: SCOPE },
  OAuthClientIds: { prop: 'oauthClientIds', kind: 'string', default: '', pattern: '^([^,\\s]+(,[^,\\s]+)*)?$' },
  CreateUserPool: { prop: 'createUserPool', kind: 'boolean', default: 'false', allowed: BOOLEAN },
  UserPoolDomainPrefix: {
    prop: 'userPoolDomainPrefix', kind: 'string', default: '', pattern: '^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)?$',
  },
  OAuthCallbackUrls: { prop: 'oauthCallbackUrls', kind: 'list', default: 'http://localhost:3030/callback' },
  CompletionEvents: { prop: 'completionEvents', kind: 'string', default: 'none', allowed: ['none', 'default-bus', 'stack-bus'] },
  CompletionWebhookUrl: { prop: 'completionWebhookUrl', kind: 'string', default: '', pattern: '^(https://\\S+)?$' },
  CompletionWebhookApiKeyName: {
    prop: 'completionWebhookApiKeyName', kind: 'string', default: 'x-api-key', pattern: '^[A-Za-z0-9-]{1,512}$',
  },
  CompletionWebhookApiKeySecret: {
    prop: 'completionWebhookApiKeySecret', kind: 'string', default: '', pattern: '^([A-Za-z0-9/_+=.@:-]{1,2048})?$',
  },
  ToolsTimeoutSecs: { prop: 'toolsTimeoutSecs', kind: 'number', default: '120', min: 30, max: 900 },
  AllowedOrigins: { prop: 'allowedOrigins', kind: 'string', default: '' },
  Approvers: { prop: 'approvers', kind: 'string', default: '' },
  ApprovalGate: { prop: 'approvalGate', kind: 'boolean', default: 'false', allowed: BOOLEAN },
  ApprovalsVia: { prop: 'approvalsVia', kind: 'string', default: 'any', allowed: ['any', 'elicitation'] },
  LogRetentionDays: {
    prop: 'logRetentionDays', kind: 'number', default: '30',
    allowed: ['1', '3', '5', '7', '14', '30', '60', '90', '120', '150', '180', '365', '400', '545', '731', '1096', '1827',
      '2192', '2557', '2922', '3288', '3653'],
  },
  AlarmTopicArn: { prop: 'alarmTopicArn', kind: 'string', default: '' },
  AlarmEmail: { prop: 'alarmEmail', kind: 'string', default: '', pattern: '^([^@\\s]+@[^@\\s]+\\.[^@\\s]+)?$' },
  ApplicationLogLevel: {
    prop: 'applicationLogLevel', kind: 'string', default: 'INFO', allowed: ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL'],
  },
  SystemLogLevel: { prop: 'systemLogLevel', kind: 'string', default: 'WARN', allowed: ['DEBUG', 'INFO', 'WARN'] },
  TracingMode: { prop: 'tracingMode', kind: 'string', default: 'PassThrough', allowed: ['Active', 'PassThrough'] },
  FailureRateThreshold: { prop: 'failureRateThreshold', kind: 'number', default: '0.2', min: 0, max: 1 },
  DefaultRequestTtlSecs: { prop: 'defaultRequestTtlSecs', kind: 'number', default: '3600', min: 60, max: 21600 },
  InlineInputMaxBytes: { prop: 'inlineInputMaxBytes', kind: 'number', default: '128000', min: 0, max: 128000 },
  TrainingInputPrefixes: {
    prop: 'trainingInputPrefixes', kind: 'string', default: '', pattern: `^(${S3_PREFIX}(,${S3_PREFIX})*)?$`,
  },
  TrainingInstanceTypes: {
    prop: 'trainingInstanceTypes', kind: 'string', default: 'ml.m5.xlarge', pattern: `^${INSTANCE_TYPE}(,${INSTANCE_TYPE})*$`,
  },
  CallerSubmitsPerMinute: { prop: 'callerSubmitsPerMinute', kind: 'number', default: '60', min: 0, max: 100000 },
  CallerRunsPerHour: { prop: 'callerRunsPerHour', kind: 'number', default: '10', min: 0, max: 10000 },
  CallerWaitsMax: { prop: 'callerWaitsMax', kind: 'number', default: '4', min: 0, max: 1000 },
  CallerReadsPerMinute: { prop: 'callerReadsPerMinute', kind: 'number', default: '600', min: 0, max: 100000 },
  ToolsReservedConcurrency: { prop: 'toolsReservedConcurrency', kind: 'number', default: '0', min: 0, max: 10000 },
  AgentCoreGatewayId: { prop: 'agentCoreGatewayId', kind: 'string', default: '', pattern: '^(([0-9a-z][-]?){1,100}-[0-9a-z]{10})?$' },
  AgentCoreGatewayRoleArn: { prop: 'agentCoreGatewayRoleArn', kind: 'string', default: '', pattern: ROLE_ARN },
  AgentCoreTargetName: { prop: 'agentCoreTargetName', kind: 'string', default: 'mcp-tools', pattern: '^([0-9a-zA-Z][-]?){1,100}$' },
};

type PropValue = string | number | boolean | string[];

/** A CloudFormation-style string value as the prop's type. */
export function parseParameter(name: string, text: string): PropValue {
  const spec = PARAMETERS[name];
  if (!spec) {
    throw new Error(`no such parameter: ${name} (known: ${Object.keys(PARAMETERS).join(', ')})`);
  }
  switch (spec.kind) {
    case 'number': {
      const value = Number(text);
      if (text.trim() === '' || !Number.isFinite(value)) {
        throw new Error(`${name}: ${JSON.stringify(text)} is not a number`);
      }
      return value;
    }
    case 'boolean':
      if (text !== 'true' && text !== 'false') {
        throw new Error(`${name}: ${JSON.stringify(text)} is neither true nor false`);
      }
      return text === 'true';
    case 'list':
      return text.split(',').map((v) => v.trim());
    default:
      return text;
  }
}

/**
 * Props from parameter values named as in the template (what `sam deploy --parameter-overrides`
 * takes). An empty string means "not given", as it does in the template.
 */
export function propsFromParameters(values: Readonly<Record<string, string>>): Record<string, PropValue> {
  const props: Record<string, PropValue> = {};
  for (const [name, text] of Object.entries(values)) {
    const value = parseParameter(name, text);
    if (value !== '') {
      props[PARAMETERS[name].prop] = value;
    }
  }
  return props;
}
