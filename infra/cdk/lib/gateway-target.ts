import * as fs from 'fs';
import * as agentcore from 'aws-cdk-lib/aws-bedrockagentcore';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { Deployment } from './deployment';
import { fn } from './functions';
import { Tools } from './tools';

/** gateway-target's: its calls do not stream, so a wait is 20 s at most. */
const GATEWAY_TARGET_TIMEOUT_SECS = 45;

/**
 * The same tools behind AgentCore Gateway (agentCoreGatewayId): the Gateway invokes
 * gateway-target with a tool's arguments; it serves the tools through the same code as mcp-tools
 * and runs with the same role.
 */
export function gatewayTarget(d: Deployment, tools: Tools): lambda.Function | undefined {
  const s = d.s;
  if (!tools.gatewayTargetLogs) {
    return undefined;
  }
  const target = fn(d, 'GatewayTargetFunction', 'gateway-target', {
    description: 'The MCP tools (submit_job, check_job_status, training tools) as an AgentCore Gateway Lambda target.',
    role: tools.role,
    logGroup: tools.gatewayTargetLogs,
    timeoutSecs: GATEWAY_TARGET_TIMEOUT_SECS,
    layers: tools.layers,
    environment: { ...tools.environment, FUNCTION_TIMEOUT_SECS: String(GATEWAY_TARGET_TIMEOUT_SECS) },
  });
  const permission = d.add(lambda.CfnPermission, 'GatewayTargetInvokePermission', {
    action: 'lambda:InvokeFunction',
    functionName: target.functionArn,
    principal: s.agentCoreGatewayRoleArn,
  });
  const created = d.add(agentcore.CfnGatewayTarget, 'GatewayTarget', {
    gatewayIdentifier: s.agentCoreGatewayId,
    name: s.agentCoreTargetName,
    description: 'Long-running ML work on SageMaker (async inference, training pipeline runs).',
    credentialProviderConfigurations: [{ credentialProviderType: 'GATEWAY_IAM_ROLE' }],
    targetConfiguration: {
      mcp: {
        lambda: {
          lambdaArn: target.functionArn,
          toolSchema: { inlinePayload: toolSchema(d.toolSchemaFile) },
        },
      },
    },
  });
  created.addResourceDependency(permission);
  return target;
}

function toolSchema(file: string): agentcore.CfnGatewayTarget.ToolDefinitionProperty[] {
  if (!fs.existsSync(file)) {
    throw new Error(`McpAsyncJobs: the Gateway target's tool schema ${file} is missing (make tool-schema writes it)`);
  }
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}
