import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { Deployment } from './deployment';
import { fn } from './functions';
import { Storage } from './storage';
import { given, usesOAuth } from './settings';
import { Tools } from './tools';
import { UserPool } from './user-pool';

/** The MCP server on its Function URL, and what its callers need. */
export interface McpTools {
  readonly fn: lambda.Function;
  readonly url: lambda.CfnUrl;
  /** For IAM callers of the Function URL. */
  readonly callerPolicy: iam.CfnManagedPolicy;
}

export function mcpTools(d: Deployment, tools: Tools, storage: Storage, pool?: UserPool): McpTools {
  const s = d.s;
  // Only the chosen auth mode's variables: oauth with an issuer or the user pool, else bearer
  // with auth type NONE, else iam.
  const oauthAuth = usesOAuth(s);
  const bearerAuth = s.functionUrlAuthType === 'NONE' && !oauthAuth;
  const oauthSetting = (value: string) => (oauthAuth && given(value) ? value : undefined);
  const server = fn(d, 'McpToolsFunction', 'mcp-tools', {
    description: 'MCP server (submit_job, check_job_status, training tools) on a Function URL.',
    role: tools.role,
    logGroup: tools.mcpToolsLogs,
    // A plain wait is 20 s at most; a streamed one (with a progress token) up to this less 10 s.
    timeoutSecs: s.toolsTimeoutSecs,
    reservedConcurrentExecutions: s.toolsReservedConcurrency > 0 ? s.toolsReservedConcurrency : undefined,
    layers: tools.layers,
    environment: {
      AUTH_MODE: oauthAuth ? 'oauth' : bearerAuth ? 'bearer' : 'iam',
      MCP_BEARER_TOKEN_SHA256: bearerAuth && given(s.bearerTokenSha256) ? s.bearerTokenSha256 : undefined,
      MCP_BEARER_TOKENS: bearerAuth && given(s.bearerTokens) ? s.bearerTokens : undefined,
      OAUTH_ISSUER: pool?.issuer ?? oauthSetting(s.oauthIssuer),
      OAUTH_AUDIENCE: oauthSetting(s.oauthAudience),
      OAUTH_JWKS_URI: oauthSetting(s.oauthJwksUri),
      OAUTH_READ_SCOPE: s.createUserPool ? 'mcp-tools/jobs.read' : oauthSetting(s.oauthReadScope),
      OAUTH_WRITE_SCOPE: s.createUserPool ? 'mcp-tools/jobs.write' : oauthSetting(s.oauthWriteScope),
      OAUTH_APPROVE_SCOPE: s.createUserPool ? 'mcp-tools/jobs.approve' : oauthSetting(s.oauthApproveScope),
      // Cognito's access tokens carry client_id and no aud: the agents' client and the approvers'.
      OAUTH_CLIENT_IDS: pool ? `${pool.client.ref},${pool.approverClient.ref}` : oauthSetting(s.oauthClientIds),
      MCP_ALLOWED_ORIGINS: s.allowedOrigins,
      APPROVERS: s.approvers,
      // MCP Events (events/poll, events/subscribe, events/unsubscribe): gateway-target serves none.
      EVENTS_TABLE: storage.eventsTable.tableName,
      SUBSCRIPTIONS_TABLE: storage.subscriptionsTable.tableName,
      ...tools.environment,
      // The timeout: a reservation older than it (plus a margin) is a crashed submission.
      FUNCTION_TIMEOUT_SECS: String(s.toolsTimeoutSecs),
    },
  });
  // Streamed: progress notifications reach the client while a tool waits.
  const url = d.add(lambda.CfnUrl, 'McpToolsFunctionUrl', {
    targetFunctionArn: server.functionName,
    authType: s.functionUrlAuthType,
    invokeMode: 'RESPONSE_STREAM',
  });
  // With auth type NONE anyone may reach the URL and the function checks the token itself; a
  // Function URL created since October 2025 needs both statements.
  if (s.functionUrlAuthType === 'NONE') {
    d.add(lambda.CfnPermission, 'McpToolsUrlPublicInvoke', {
      action: 'lambda:InvokeFunctionUrl',
      functionName: server.functionName,
      principal: '*',
      functionUrlAuthType: 'NONE',
    });
    d.add(lambda.CfnPermission, 'McpToolsUrlPublicInvokeViaUrl', {
      action: 'lambda:InvokeFunction',
      functionName: server.functionName,
      principal: '*',
      invokedViaFunctionUrl: true,
    });
  }

  // For callers in AWS_IAM mode: attach it to the caller's user or role. A Function URL created
  // since October 2025 needs both actions in the caller's identity policy.
  const callerPolicy = d.add(iam.CfnManagedPolicy, 'McpToolsCallerPolicy', {
    description: `Lets a caller use the MCP server of stack ${d.name} through its Function URL (AWS_IAM auth).`,
    policyDocument: {
      Version: '2012-10-17',
      Statement: [
        { Effect: 'Allow', Action: 'lambda:InvokeFunctionUrl', Resource: server.functionArn },
        {
          Effect: 'Allow',
          Action: 'lambda:InvokeFunction',
          Resource: server.functionArn,
          Condition: { Bool: { 'lambda:InvokedViaFunctionUrl': 'true' } },
        },
      ],
    },
  });
  return { fn: server, url, callerPolicy };
}
