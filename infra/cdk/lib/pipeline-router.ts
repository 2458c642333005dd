import * as events from 'aws-cdk-lib/aws-events';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { Deployment } from './deployment';
import { consumeQueue, fn, invokePermission, logGroup, onFailureToDlq, queueEventSource, role, writeLogs } from './functions';
import { allow, tracing } from './policies';
import { queuePolicy, retriedThenDeadLettered } from './queues';
import { Storage } from './storage';

/**
 * pipeline-router records the pipelines' runs as they end (EventBridge's status changes) and
 * what their CallbackSteps ask (the callback queue). Only with a pipeline: an inference-only
 * stack has no router, no rule, no completion queue.
 */
export function pipelineRouter(d: Deployment, storage: Storage): lambda.Function | undefined {
  const s = d.s;
  const dlq = storage.asyncFailureDlq;
  const pipelineResultsQueue = storage.pipelineResultsQueue;
  const callbackQueue = storage.pipelineCallbackQueue;
  if (!d.hasPipeline || !pipelineResultsQueue || !callbackQueue) {
    return undefined;
  }
  const pipelineRouterLogs = logGroup(d, 'PipelineRouterLogGroup', 'pipeline-router');
  const routerRunActions = ['sagemaker:DescribePipelineExecution', 'sagemaker:ListPipelineExecutionSteps'];
  const pipelineRouterRole = role(d, 'PipelineRouterRole', 'pipeline-router', [
    writeLogs(pipelineRouterLogs),
    ...tracing(d),
    // GetItem: one read at a cold start, of a key no run has, to open the connection in init
    // (DynamoRuns::warm_up).
    allow(['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:BatchGetItem'], [storage.pipelineResultsTable.tableArn]),
    // MCP Events: each run's end (and question) in its owner's log, once (a conditional put),
    // marked for the webhooks of the owner's subscriptions (Query): the events table's stream
    // takes it to event-delivery.
    allow(['dynamodb:PutItem'], [storage.eventsTable.tableArn]),
    allow(['dynamodb:Query'], [storage.subscriptionsTable.tableArn]),
    allow(['sqs:SendMessage'], [pipelineResultsQueue.queueArn, dlq.queueArn]),
    // The callback queue's event source: what the pipelines' CallbackSteps ask.
    consumeQueue(callbackQueue),
    // Describes a run; lists its steps (a callback message's token must be held by the
    // run's waiting CallbackStep).
    allow(routerRunActions, [s.narrowEventsToPipeline
      ? `${d.pipelineArn}/execution/*`
      : `${d.sagemakerArn}:pipeline/*/execution/*`]),
    // The catalog's pipelines' runs.
    ...(s.narrowEventsToPipeline && d.catalogExecutionArns.length > 0
      ? [allow(routerRunActions, d.catalogExecutionArns)] : []),
  ]);
  const router = fn(d, 'PipelineRouterFunction', 'pipeline-router', {
    description: 'Records SageMaker pipeline run outcomes and sends them to SQS.',
    role: pipelineRouterRole,
    logGroup: pipelineRouterLogs,
    timeoutSecs: 30,
    environment: {
      PIPELINE_RESULTS_TABLE: storage.pipelineResultsTable.tableName,
      PIPELINE_RESULTS_QUEUE_URL: pipelineResultsQueue.queueUrl,
      EVENTS_TABLE: storage.eventsTable.tableName,
      SUBSCRIPTIONS_TABLE: storage.subscriptionsTable.tableName,
      RESULT_TTL_SECS: String(s.resultTtlSecs),
    },
  });
  onFailureToDlq(d, 'PipelineRouterInvokeConfig', router, dlq);

  const rule = d.add(events.CfnRule, 'PipelineStatusRule', {
    description: 'SageMaker pipeline runs reaching a terminal status, to pipeline-router.',
    eventPattern: {
      'source': ['aws.sagemaker'],
      'detail-type': ['SageMaker Model Building Pipeline Execution Status Change'],
      'detail': {
        currentPipelineExecutionStatus: ['Succeeded', 'Failed', 'Stopped', 'CompletedWithFailures'],
        ...(s.narrowEventsToPipeline ? { pipelineArn: [d.pipelineArn, ...d.catalogPipelineArns] } : {}),
      },
    },
    targets: [{
      id: 'pipeline-router',
      arn: router.functionArn,
      ...retriedThenDeadLettered(dlq),
    }],
  });
  invokePermission(d, 'PipelineStatusRulePermission', router, 'events.amazonaws.com', rule.attrArn);
  queueEventSource(d, 'PipelineCallbackEventSource', callbackQueue, router, { batchSize: 10 });
  // EventBridge puts events it could not deliver to pipeline-router here.
  queuePolicy(d, 'AsyncFailureDLQPolicy', dlq, 'events.amazonaws.com', rule.attrArn);
  return router;
}
