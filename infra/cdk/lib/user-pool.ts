import * as cognito from 'aws-cdk-lib/aws-cognito';
import { Deployment } from './deployment';

/** A Cognito user pool as mcp-tools' authorization server: its issuer and the app client MCP clients sign in with. */
export interface UserPool {
  readonly pool: cognito.CfnUserPool;
  readonly client: cognito.CfnUserPoolClient;
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
  // The scopes mcp-tools checks: mcp-tools/jobs.read and mcp-tools/jobs.write.
  const resourceServer = d.add(cognito.CfnUserPoolResourceServer, 'UserPoolResourceServer', {
    userPoolId: pool.ref,
    identifier: 'mcp-tools',
    name: `${d.name} MCP tools`,
    scopes: [
      { scopeName: 'jobs.read', scopeDescription: 'Read your jobs and training runs' },
      { scopeName: 'jobs.write', scopeDescription: 'Start and cancel jobs and training runs' },
    ],
  });
  // A public client (MCP clients keep no secret): authorization code with PKCE.
  const client = d.add(cognito.CfnUserPoolClient, 'UserPoolClient', {
    userPoolId: pool.ref,
    clientName: `${d.name}-mcp-clients`,
    generateSecret: false,
    allowedOAuthFlowsUserPoolClient: true,
    allowedOAuthFlows: ['code'],
    allowedOAuthScopes: ['openid', 'mcp-tools/jobs.read', 'mcp-tools/jobs.write'],
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
  client.addResourceDependency(resourceServer);
  // Managed login (version 2) shows its pages only for an app client with a style; Cognito's own.
  d.add(cognito.CfnManagedLoginBranding, 'UserPoolManagedLoginBranding', {
    userPoolId: pool.ref,
    clientId: client.ref,
    useCognitoProvidedValues: true,
  });
  return { pool, client, issuer: `https://cognito-idp.${d.region}.amazonaws.com/${pool.ref}` };
}
