import { Aws, Fn } from 'aws-cdk-lib/core';
import * as autoscaling from 'aws-cdk-lib/aws-applicationautoscaling';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as sagemaker from 'aws-cdk-lib/aws-sagemaker';
import { Deployment } from './deployment';
import { allow } from './policies';
import { given } from './settings';
import { OutcomeTopics } from './topics';

/** The async endpoints the construct creates from a Model: modelName's and the catalog's. */
export interface Endpoints {
  readonly endpoint?: sagemaker.CfnEndpoint;
  readonly endpointConfig?: sagemaker.CfnEndpointConfig;
  /** The catalog's endpoints the construct created (catalogModelNames). */
  readonly catalogEndpoints: sagemaker.CfnEndpoint[];
}

/**
 * Wired at creation: SageMaker publishes outcomes only to the NotificationConfig topics and
 * writes only to these S3 paths, which the functions' IAM grants. An EndpointConfig is
 * immutable: CloudFormation replaces it (a new generated name) on any change.
 */
export function endpoints(d: Deployment, topics: OutcomeTopics): Endpoints {
  const s = d.s;
  const createEndpoint = given(s.modelName);
  const modelRolePolicy = (createEndpoint || d.catalog.models.length > 0) && s.attachModelRolePolicy
    ? modelExecutionRolePolicy(d, topics) : undefined;
  const wiring = { topics, modelRolePolicy };
  const own = createEndpoint
    ? asyncEndpoint(d, wiring, { config: 'AsyncEndpointConfig', endpoint: 'AsyncEndpoint', prefix: 'Endpoint' },
      s.asyncEndpointName, s.modelName, false)
    : undefined;
  return {
    endpoint: own?.endpoint,
    endpointConfig: own?.config,
    // The catalog's endpoints with a Model, each as the template's slot of its place.
    catalogEndpoints: d.catalog.models.map((m) => asyncEndpoint(d, wiring,
      { config: `CatalogEndpoint${m.slot}Config`, endpoint: `CatalogEndpoint${m.slot}`, prefix: `CatalogEndpoint${m.slot}` },
      m.endpoint, m.model, true).endpoint),
  };
}

/**
 * SageMaker publishes and writes as the Model's execution role, which this stack does not own:
 * what it needs for this stack is attached to it (by its name, the ARN's last element).
 */
function modelExecutionRolePolicy(d: Deployment, topics: OutcomeTopics): iam.CfnPolicy {
  return d.add(iam.CfnPolicy, 'ModelExecutionRolePolicy', {
    // Named after the stack's id: any stack name fits, and two stacks on one role keep their own.
    policyName: Fn.join('', ['mcp-async-jobs-', Fn.select(2, Fn.split('/', Aws.STACK_ID))]),
    roles: [d.s.modelExecutionRoleArn.split('/').pop() as string],
    policyDocument: {
      Version: '2012-10-17',
      Statement: [
        { Sid: 'PublishOutcomes', ...allow(['sns:Publish'], [topics.successTopicArn, topics.errorTopicArn]) },
        { Sid: 'WriteOutcomes', ...allow(['s3:PutObject'], d.readableOutcomes) },
        { Sid: 'ReadInputs', ...allow(['s3:GetObject'], [`${d.bucketArn}/inputs/*`]) },
        ...(d.outputKeys.length > 0 ? [{ Sid: 'UseKeys', ...allow(['kms:GenerateDataKey', 'kms:Decrypt'], d.outputKeys) }] : []),
      ],
    },
  });
}

/**
 * One endpoint and its scaling: `ids` names its resources as the template does (AsyncEndpoint
 * and Endpoint..., or CatalogEndpoint<i>...). The stack's own endpoint is named from the
 * parameter (its scaling waits on it by DependsOn); a catalog's reads its name back (GetAtt).
 */
function asyncEndpoint(d: Deployment, wiring: { topics: OutcomeTopics; modelRolePolicy?: iam.CfnPolicy },
  ids: { config: string, endpoint: string, prefix: string }, endpointName: string, modelName: string,
  nameFromEndpoint: boolean) {
  const s = d.s;
  const { topics, modelRolePolicy } = wiring;
  const kmsKeyId = given(s.endpointKmsKeyId) ? s.endpointKmsKeyId : undefined;
  const config = d.add(sagemaker.CfnEndpointConfig, ids.config, {
    kmsKeyId,
    productionVariants: [{
      variantName: s.variantName,
      modelName,
      instanceType: s.endpointInstanceType,
      initialInstanceCount: s.endpointInitialInstanceCount,
      initialVariantWeight: 1,
    }],
    asyncInferenceConfig: {
      clientConfig: { maxConcurrentInvocationsPerInstance: s.maxConcurrentInvocationsPerInstance },
      outputConfig: {
        s3OutputPath: d.s3OutputPath,
        s3FailurePath: d.s3FailurePath,
        kmsKeyId,
        notificationConfig: {
          successTopic: topics.successTopicArn,
          errorTopic: topics.errorTopicArn,
          // Responses up to 128 KB arrive in the message: no S3 read for them.
          includeInferenceResponseIn: ['SUCCESS_NOTIFICATION_TOPIC'],
        },
      },
    },
    // SageMaker publishes a test notification when the endpoint is created: these references
    // order the topic policies first (as the template does, where a DependsOn cannot name a
    // resource whose condition may be false).
    tags: [
      { key: 'success-topic-policy', value: topics.successTopicPolicy ? topics.successTopicPolicy.ref : 'existing-topic' },
      { key: 'error-topic-policy', value: topics.errorTopicPolicy ? topics.errorTopicPolicy.ref : 'existing-topic' },
      // And the execution role's policy: SageMaker writes and publishes as that role.
      { key: 'model-role-policy', value: modelRolePolicy ? modelRolePolicy.ref : 'not-attached' },
    ],
  });

  const endpoint = d.add(sagemaker.CfnEndpoint, ids.endpoint, {
    endpointName,
    endpointConfigName: config.attrEndpointConfigName,
  });
  const endpointRef = nameFromEndpoint ? endpoint.attrEndpointName : endpointName;

  // Scale to zero, and back out: target tracking keeps the backlog per instance near the
  // target (and removes the last instance once the queue is empty); at zero instances that
  // metric has no data, so a step policy fired by HasBacklogWithoutCapacity adds the first one.
  const scalableTarget = d.add(autoscaling.CfnScalableTarget, `${ids.prefix}ScalableTarget`, {
    serviceNamespace: 'sagemaker',
    resourceId: `endpoint/${endpointRef}/variant/${s.variantName}`,
    scalableDimension: 'sagemaker:variant:DesiredInstanceCount',
    minCapacity: s.endpointMinInstanceCount,
    maxCapacity: s.endpointMaxInstanceCount,
  });
  if (!nameFromEndpoint) scalableTarget.addResourceDependency(endpoint);
  const endpointDimensions = [{ name: 'EndpointName', value: endpointRef }];

  d.add(autoscaling.CfnScalingPolicy, `${ids.prefix}BacklogScalingPolicy`, {
    policyName: `${d.name}-backlog-per-instance`,
    policyType: 'TargetTrackingScaling',
    scalingTargetId: scalableTarget.ref,
    targetTrackingScalingPolicyConfiguration: {
      targetValue: s.targetBacklogPerInstance,
      scaleInCooldown: 600,
      scaleOutCooldown: 300,
      customizedMetricSpecification: {
        namespace: 'AWS/SageMaker',
        metricName: 'ApproximateBacklogSizePerInstance',
        dimensions: endpointDimensions,
        statistic: 'Average',
      },
    },
  });

  const scaleOutFromZero = d.add(autoscaling.CfnScalingPolicy, `${ids.prefix}ScaleOutFromZeroPolicy`, {
    policyName: `${d.name}-scale-out-from-zero`,
    policyType: 'StepScaling',
    scalingTargetId: scalableTarget.ref,
    stepScalingPolicyConfiguration: {
      adjustmentType: 'ChangeInCapacity',
      cooldown: 300,
      metricAggregationType: 'Average',
      stepAdjustments: [{ metricIntervalLowerBound: 0, scalingAdjustment: 1 }],
    },
  });

  d.add(cloudwatch.CfnAlarm, `${ids.prefix}HasBacklogWithoutCapacityAlarm`, {
    alarmDescription: 'Requests wait on an endpoint with no instance; adds the first one (scale out from zero).',
    namespace: 'AWS/SageMaker',
    metricName: 'HasBacklogWithoutCapacity',
    dimensions: endpointDimensions,
    statistic: 'Average',
    period: 60,
    evaluationPeriods: 2,
    datapointsToAlarm: 2,
    threshold: 1,
    comparisonOperator: 'GreaterThanOrEqualToThreshold',
    treatMissingData: 'missing',
    alarmActions: [scaleOutFromZero.ref],
  });
  return { config, endpoint };
}
