import * as path from 'path';
import { Token } from 'aws-cdk-lib/core';
import { PARAMETERS, parseParameter } from './parameters';
import { McpAsyncJobsProps, ToolCatalog } from './props';

/** Every prop with its default applied. */
export type Settings = Required<Omit<McpAsyncJobsProps, 'functionsDir' | 'toolSchemaFile' | 'namePrefix' | 'logicalIdPrefix' | 'catalog'>>
  & { readonly catalog: string | ToolCatalog };

export function given(value: string | undefined): value is string {
  return value !== undefined && value !== '';
}

/** mcp-tools accepts OAuth access tokens: an issuer's, or those of the user pool created as one. */
export function usesOAuth(s: Settings): boolean {
  return given(s.oauthIssuer) || s.createUserPool;
}

function describe(value: unknown): string {
  return JSON.stringify(value);
}

/** The props with defaults applied, or an error naming every prop that breaks the template's constraints. */
export function settingsOf(props: McpAsyncJobsProps): Settings {
  const values: Record<string, unknown> = {};
  const errors: string[] = [];
  for (const [name, spec] of Object.entries(PARAMETERS)) {
    let value = (props as unknown as Record<string, unknown>)[spec.prop];
    if (value === undefined) {
      if (spec.default === undefined) {
        errors.push(`${spec.prop} is required (the template's ${name})`);
        continue;
      }
      value = parseParameter(name, spec.default);
    }
    values[spec.prop] = value;
    if (Token.isUnresolved(value)) {
      continue;
    }
    if (spec.prop === 'catalog' && typeof value === 'object' && value !== null) {
      continue;
    }
    // The template's pattern is the catalog file's name's; a list's applies to each element.
    const text = spec.kind === 'list' ? undefined : spec.prop === 'catalog' ? path.basename(String(value)) : String(value);
    if (spec.kind === 'list' && Array.isArray(value) && spec.pattern) {
      for (const element of value) {
        if (!new RegExp(spec.pattern).test(String(element))) {
          errors.push(`${spec.prop} ${describe(element)} does not match ${spec.pattern}`);
        }
      }
    }
    if (spec.kind === 'number' && (typeof value !== 'number' || !Number.isFinite(value))) {
      errors.push(`${spec.prop} must be a number, not ${describe(value)}`);
    } else if (spec.kind === 'boolean' && typeof value !== 'boolean') {
      errors.push(`${spec.prop} must be true or false, not ${describe(value)}`);
    } else if (spec.kind === 'list' && !(Array.isArray(value) && value.every((v) => typeof v === 'string'))) {
      errors.push(`${spec.prop} must be a list of strings, not ${describe(value)}`);
    } else if (spec.kind === 'string' && typeof value !== 'string') {
      errors.push(`${spec.prop} must be a string, not ${describe(value)}`);
    } else if (text !== undefined) {
      if (spec.pattern && !new RegExp(spec.pattern).test(text)) {
        errors.push(`${spec.prop} ${describe(value)} does not match ${spec.pattern}`);
      }
      if (spec.allowed && !spec.allowed.includes(text)) {
        errors.push(`${spec.prop} ${describe(value)} is not one of ${spec.allowed.join(', ')}`);
      }
      if (spec.min !== undefined && (value as number) < spec.min) {
        errors.push(`${spec.prop} ${describe(value)} is below ${spec.min}`);
      }
      if (spec.max !== undefined && (value as number) > spec.max) {
        errors.push(`${spec.prop} ${describe(value)} is above ${spec.max}`);
      }
    }
  }
  const s = values as Settings;
  if (errors.length === 0) {
    errors.push(...ruleViolations(s));
  }
  if (errors.length > 0) {
    throw new Error(`McpAsyncJobs: ${errors.join('; ')}`);
  }
  return s;
}

/** The template's Rules: combinations that deploy but cannot work. Each message starts with the rule's name. */
function ruleViolations(s: Settings): string[] {
  const errors: string[] = [];
  const oauth = usesOAuth(s);
  if (s.functionUrlAuthType === 'NONE' && !oauth && !given(s.bearerTokenSha256) && !given(s.bearerTokens)) {
    errors.push('BearerTokenForUrlAuthNone: functionUrlAuthType NONE without OAuth needs bearerTokenSha256 or '
      + 'bearerTokens, or the MCP server would be open to anyone');
  }
  if (given(s.completionWebhookUrl)) {
    if (s.completionEvents === 'none') {
      errors.push('WebhookNeedsEventsAndKey: CompletionWebhookUrl needs CompletionEvents default-bus or stack-bus.');
    }
    if (!given(s.completionWebhookApiKeySecret)) {
      errors.push('WebhookNeedsEventsAndKey: CompletionWebhookUrl needs CompletionWebhookApiKeySecret.');
    }
  }
  if (oauth && s.functionUrlAuthType !== 'NONE') {
    errors.push('UrlAuthNoneForOAuth: OAuth (oauthIssuer or createUserPool) needs functionUrlAuthType NONE: the '
      + 'function checks the access token itself, and with AWS_IAM no OAuth client could get past the Function URL');
  }
  if (s.createUserPool) {
    if (!given(s.userPoolDomainPrefix)) {
      errors.push('DomainPrefixForUserPool: createUserPool needs userPoolDomainPrefix, the managed login domain users sign in at');
    }
    const beside = (['oauthIssuer', 'oauthJwksUri', 'oauthReadScope', 'oauthWriteScope', 'oauthApproveScope',
      'oauthClientIds'] as const).filter((prop) => given(s[prop]));
    if (beside.length > 0) {
      errors.push(`DomainPrefixForUserPool: createUserPool makes the user pool the issuer, with its own scopes and app `
        + `clients: leave ${beside.join(', ')} unset`);
    }
  }
  if (given(s.modelName) && !given(s.modelExecutionRoleArn)) {
    errors.push('ExecutionRoleForEndpoint: modelName needs modelExecutionRoleArn (the Model\'s execution role), or the '
      + 'endpoint could not publish its outcomes');
  }
  if (s.catalogModelNames.some(given) && !given(s.modelExecutionRoleArn)) {
    errors.push('ExecutionRoleForCatalogModels: catalogModelNames needs modelExecutionRoleArn (the Models\' execution '
      + 'role), or the endpoints could not publish their outcomes');
  }
  if (s.catalogPipelineNames.some(given) && !given(s.pipelineName)) {
    errors.push('PipelineForCatalogPipelines: catalog pipelines need pipelineName (the stack routes pipeline runs only '
      + 'with it): set it to one of the catalog\'s pipelines');
  }
  if (given(s.agentCoreGatewayId) && !given(s.agentCoreGatewayRoleArn)) {
    errors.push('GatewayRoleForGatewayTarget: agentCoreGatewayId needs agentCoreGatewayRoleArn, or the Gateway could '
      + 'not invoke its target');
  }
  return errors;
}

