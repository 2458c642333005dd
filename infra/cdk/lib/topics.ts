import * as sns from 'aws-cdk-lib/aws-sns';
import { Deployment } from './deployment';
import { given } from './settings';

/** The topics the endpoint's NotificationConfig names: created here, or the ones given. */
export interface OutcomeTopics {
  readonly successTopicArn: string;
  readonly errorTopicArn: string;
  /** The created topics' policies, which an endpoint created here waits for. */
  readonly successTopicPolicy?: sns.CfnTopicPolicy;
  readonly errorTopicPolicy?: sns.CfnTopicPolicy;
}

export function outcomeTopics(d: Deployment): OutcomeTopics {
  const s = d.s;
  const topic = (topicId: string) => d.add(sns.CfnTopic, topicId, { kmsMasterKeyId: 'alias/aws/sns' });
  const successTopic = given(s.successTopicArn) ? undefined : topic('SuccessTopic');
  const errorTopic = given(s.errorTopicArn) ? undefined : topic('ErrorTopic');

  // SageMaker publishes as the endpoint's execution role. The AWS managed key alias/aws/sns
  // lets any principal of the account encrypt through SNS, so sns:Publish is all it needs.
  const topicPolicy = (policyId: string, created?: sns.CfnTopic) => created && given(s.modelExecutionRoleArn)
    ? d.add(sns.CfnTopicPolicy, policyId, {
      topics: [created.ref],
      policyDocument: {
        Version: '2012-10-17',
        Statement: [{
          Sid: 'EndpointExecutionRolePublishes',
          Effect: 'Allow',
          Principal: { AWS: s.modelExecutionRoleArn },
          Action: 'sns:Publish',
          Resource: created.ref,
        }],
      },
    })
    : undefined;
  return {
    successTopicArn: successTopic ? successTopic.ref : s.successTopicArn,
    errorTopicArn: errorTopic ? errorTopic.ref : s.errorTopicArn,
    successTopicPolicy: topicPolicy('SuccessTopicPolicy', successTopic),
    errorTopicPolicy: topicPolicy('ErrorTopicPolicy', errorTopic),
  };
}
