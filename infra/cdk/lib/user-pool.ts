import * as cognito from 'aws-cdk-lib/aws-cognito';
import { Deployment } from './deployment';

/** A Cognito user pool as mcp-tools' authorization server: its issuer and the app clients MCP clients sign in with. */
export interface UserPool {
  readonly pool: cognito.CfnUserPool;
  /** The agents' client: jobs.read and jobs.write. */
  readonly client: cognito.CfnUserPoolClient;
  /** The approvers' client: jobs.read and jobs.approve. */
  readonly approverClient: cognito.CfnUserPoolClient;
  /** The pool's issuer URL (OAUTH_ISSUER). */
  readonly issuer: string;
}

/**
 * For teams without an identity provider (createUserPool). Only an administrator creates users:
 * a pool open to sign-up would let anyone start SageMaker work.
 */
export function userPool(d: Deployment): UserPool | undefined {
  const s = d.s;
  if (!s.createUserPool) {
    return undefined;
  }
  const pool = d.add(cognito.CfnUserPool, 'UserPool', {
    userPoolName: `${d.name}-mcp-users`,
    usernameAttributes: ['email'],
    autoVerifiedAttributes: ['email'],
    usernameConfiguration: { caseSensitive: false },
    adminCreateUserConfig: { allowAdminCreateUserOnly: true },
    accountRecoverySetting: { recoveryMechanisms: [{ name: 'verified_email', priority: 1 }] },
    policies: {
      passwordPolicy: {
        minimumLength: 12,
        requireLowercase: true,
        requireUppercase: true,
        requireNumbers: true,
        requireSymbols: false,
        temporaryPasswordValidityDays: 7,
      },
    },
    mfaConfiguration: 'OPTIONAL',
    enabledMfas: ['SOFTWARE_TOKEN_MFA'],
    // The pool holds sign-in accounts only; jobs and runs live in the tables (and expire).
    deletionProtection: 'INACTIVE',
  });
  d.add(cognito.CfnUserPoolDomain, 'UserPoolDomain', {
    userPoolId: pool.ref,
    domain: s.userPoolDomainPrefix,
    managedLoginVersion: 2,
  });
  // The scopes mcp-tools checks: mcp-tools/jobs.read, mcp-tools/jobs.write and mcp-tools/jobs.approve.
  const resourceServer = d.add(cognito.CfnUserPoolResourceServer, 'UserPoolResourceServer', {
    userPoolId: pool.ref,
    identifier: 'mcp-tools',
    name: `${d.name} MCP tools`,
    scopes: [
      { scopeName: 'jobs.read', scopeDescription: 'Read your jobs and training runs' },
      { scopeName: 'jobs.write', scopeDescription: 'Start and cancel jobs and training runs' },
      { scopeName: 'jobs.approve', scopeDescription: 'Answer runs\' questions and approve or reject their models' },
    ],
  });
  // A public client (MCP clients keep no secret): authorization code with PKCE.
  const appClient = (id: string, clientName: string, scope: string) => {
    const made = d.add(cognito.CfnUserPoolClient, id, {
      userPoolId: pool.ref,
      clientName,
      generateSecret: false,
      allowedOAuthFlowsUserPoolClient: true,
      allowedOAuthFlows: ['code'],
      allowedOAuthScopes: ['openid', 'mcp-tools/jobs.read', scope],
      callbackUrLs: s.oauthCallbackUrls,
      supportedIdentityProviders: ['COGNITO'],
      explicitAuthFlows: ['ALLOW_USER_SRP_AUTH', 'ALLOW_REFRESH_TOKEN_AUTH'],
      preventUserExistenceErrors: 'ENABLED',
      enableTokenRevocation: true,
      accessTokenValidity: 60,
      idTokenValidity: 60,
      refreshTokenValidity: 30,
      tokenValidityUnits: { accessToken: 'minutes', idToken: 'minutes', refreshToken: 'days' },
    });
    // Its scopes exist only once the resource server does.
    made.addResourceDependency(resourceServer);
    return made;
  };
  const client = appClient('UserPoolClient', `${d.name}-mcp-clients`, 'mcp-tools/jobs.write');
  // The approvers' client, apart from the agents': jobs.approve answers runs' questions and decides
  // their models, which an agent's token must not do.
  const approverClient = appClient('ApproverUserPoolClient', `${d.name}-mcp-approvers`, 'mcp-tools/jobs.approve');
  // Managed login (version 2) shows its pages only for an app client with a style; Cognito's own,
  // one per client.
  d.add(cognito.CfnManagedLoginBranding, 'UserPoolManagedLoginBranding', {
    userPoolId: pool.ref,
    clientId: client.ref,
    useCognitoProvidedValues: true,
  });
  d.add(cognito.CfnManagedLoginBranding, 'ApproverUserPoolManagedLoginBranding', {
    userPoolId: pool.ref,
    clientId: approverClient.ref,
    useCognitoProvidedValues: true,
  });
  return { pool, client, approverClient, issuer: `https://cognito-idp.${d.region}.amazonaws.com/${pool.ref}` };
}
