import * as path from 'path';
import { Aws, CfnElement } from 'aws-cdk-lib/core';
import { Construct, IConstruct } from 'constructs';
import { Catalog, catalogOf } from './catalog';
import { McpAsyncJobsProps } from './props';
import { REPO_ROOT } from './repository';
import { given, Settings, settingsOf } from './settings';

/** A construct class as CDK's are: (scope, id, props). */
type ConstructClass = new (scope: Construct, id: string, props: never) => IConstruct;

/**
 * What the construct's parts share: the scope their resources go in, under the template's
 * logical ids, the props with their defaults, and the names and ARNs derived from them.
 */
export class Deployment {
  public readonly s: Settings;
  /** The prefix of physical names (log groups, dashboard, metrics namespace). */
  public readonly name: string;
  /** The functions' own metrics (Embedded Metric Format). */
  public readonly namespace: string;
  public readonly functionsDir: string;
  public readonly toolSchemaFile: string;
  public readonly partition = Aws.PARTITION;
  public readonly region = Aws.REGION;
  public readonly account = Aws.ACCOUNT_ID;
  /** arn:<partition>:sagemaker:<region>:<account>, the start of every SageMaker ARN granted. */
  public readonly sagemakerArn: string;
  public readonly bucketArn: string;
  /** The stack's own pipeline (pipelineName; an inference-only stack has none). */
  public readonly pipelineArn: string;
  public readonly hasPipeline: boolean;
  /** The endpoint's S3OutputPath and S3FailurePath. */
  public readonly s3OutputPath: string;
  public readonly s3FailurePath: string;
  /** Where the endpoint writes its outcomes: the functions read them there. */
  public readonly readableOutcomes: string[];
  public readonly catalog: Catalog;
  public readonly catalogPipelineArns: string[];
  public readonly catalogExecutionArns: string[];
  /** The customer managed key of the bucket's default encryption (inputs, and outputs without the endpoint's). */
  public readonly bucketKeyArn?: string;
  /** Customer managed keys: the endpoint's (outputs) and the bucket's default. */
  public readonly outputKeys: string[];

  /** The prefix of the logical ids (logicalIdPrefix), for two constructs in one stack. */
  public readonly idPrefix: string;

  constructor(public readonly scope: Construct, props: McpAsyncJobsProps) {
    const s = settingsOf(props);
    this.s = s;
    this.idPrefix = props.logicalIdPrefix ?? '';
    this.name = props.namePrefix ?? Aws.STACK_NAME;
    this.namespace = `McpAsyncJobs/${this.name}`;
    this.functionsDir = props.functionsDir ?? path.join(REPO_ROOT, 'target', 'lambda');
    this.toolSchemaFile = props.toolSchemaFile ?? path.join(REPO_ROOT, 'infra', 'gateway-tool-schema.json');
    this.sagemakerArn = `arn:${this.partition}:sagemaker:${this.region}:${this.account}`;
    this.bucketArn = `arn:${this.partition}:s3:::${s.ioBucketName}`;
    this.pipelineArn = `${this.sagemakerArn}:pipeline/${s.pipelineName}`;
    this.hasPipeline = given(s.pipelineName);
    this.s3OutputPath = `s3://${s.ioBucketName}/${s.outputPrefix}`;
    this.s3FailurePath = `s3://${s.ioBucketName}/${s.failurePrefix}`;
    this.readableOutcomes = [`${this.bucketArn}/${s.outputPrefix}*`, `${this.bucketArn}/${s.failurePrefix}*`];
    this.catalog = catalogOf(s);
    this.catalogPipelineArns = this.catalog.pipelines.map((p) => `${this.sagemakerArn}:pipeline/${p}`);
    this.catalogExecutionArns = this.catalogPipelineArns.map((arn) => `${arn}/execution/*`);
    const endpointKeyArn = !given(s.endpointKmsKeyId) ? undefined : s.endpointKmsKeyId.startsWith('arn:')
      ? s.endpointKmsKeyId : `arn:${this.partition}:kms:${this.region}:${this.account}:key/${s.endpointKmsKeyId}`;
    this.bucketKeyArn = given(s.ioBucketKmsKeyArn) ? s.ioBucketKmsKeyArn : undefined;
    this.outputKeys = [endpointKeyArn, this.bucketKeyArn].filter(given);
  }

  /** A resource in the construct under the template's logical id (its construct id). */
  add<C extends ConstructClass>(type: C, id: string, props: ConstructorParameters<C>[2]): InstanceType<C> {
    return this.pin(new type(this.scope, id, props as never) as InstanceType<C>, id);
  }

  /** Gives the construct's resource the template's logical id. */
  pin<T extends IConstruct>(construct: T, logicalId: string): T {
    const element = (construct instanceof CfnElement ? construct : construct.node.defaultChild) as CfnElement;
    element.overrideLogicalId(`${this.idPrefix}${logicalId}`);
    return construct;
  }
}
