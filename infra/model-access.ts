/**
 * What the LLM handler may reach outside the stack, derived from the workflows' profiles: the Secrets
 * Manager secrets named by `apiKeySecret` and the Bedrock models named by `model`. Nothing else.
 */
import type { Profile, Workflow } from '../engine/model/schema.ts';

/** A Bedrock model as a profile names it: a model id, an inference profile id or an ARN. */
export interface BedrockModel {
  readonly model: string;
  /** The profile's `region`, when it calls Bedrock outside the stack's region. */
  readonly region?: string;
}

export interface ModelAccess {
  /** Secret names (not ARNs), sorted and unique. */
  readonly secretNames: readonly string[];
  /** Sorted and unique. */
  readonly bedrockModels: readonly BedrockModel[];
  /** SSM parameter names of `apiKeySsmParameter` (read with decryption), sorted and unique. */
  readonly ssmParameterNames?: readonly string[];
}

/** Every profile of a workflow, including those of the child workflows of its SUBGRAPH nodes. */
export function profilesOf(workflow: Workflow): Profile[] {
  const own = Object.values(workflow.profiles ?? {});
  const nested = workflow.nodes.flatMap((node) =>
    node.type === 'SUBGRAPH' ? profilesOf(node.config.workflow) : [],
  );
  return [...own, ...nested];
}

export function collectModelAccess(workflows: readonly Workflow[]): ModelAccess {
  const secrets = new Set<string>();
  const models: BedrockModel[] = [];
  const parameters = new Set<string>();
  for (const profile of workflows.flatMap(profilesOf)) {
    if (profile.provider === 'openai' && profile.apiKeySecret) secrets.add(profile.apiKeySecret);
    if (profile.provider === 'openai' && profile.apiKeySsmParameter)
      parameters.add(profile.apiKeySsmParameter);
    if (profile.provider === 'bedrock') {
      models.push(
        profile.region ? { model: profile.model, region: profile.region } : { model: profile.model },
      );
    }
  }
  return {
    secretNames: [...secrets].sort(),
    bedrockModels: uniqueModels(models),
    ...(parameters.size > 0 ? { ssmParameterNames: [...parameters].sort() } : {}),
  };
}

function uniqueModels(models: readonly BedrockModel[]): BedrockModel[] {
  const byKey = new Map(models.map((m) => [`${m.region ?? ''}|${m.model}`, m]));
  return [...byKey.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([, m]) => m);
}

/** Cross-region inference profiles are named `<geo>.<model id>`, e.g. `us.anthropic.claude-…`. */
const INFERENCE_PROFILE_PREFIX = /^(us|eu|apac|jp|au|ca|us-gov|global)\./;

export interface BedrockResources {
  /** ARNs with no wildcard. */
  readonly exact: string[];
  /**
   * Foundation-model ARNs behind cross-region inference profiles: the profile routes to any region of
   * its geography, so these must name every region (`*`) — the one wildcard, and only for these models.
   */
  readonly anyRegion: string[];
}

/**
 * ARNs a Converse call on `model` needs. `partition`, `region`, `account` may be CDK tokens.
 */
export function bedrockResources(
  models: readonly BedrockModel[],
  stack: { partition: string; region: string; account: string },
): BedrockResources {
  const exact: string[] = [];
  const anyRegion: string[] = [];
  for (const { model, region } of models) {
    const env = { ...stack, region: region ?? stack.region };
    if (model.startsWith('arn:')) {
      exact.push(model);
      continue;
    }
    const profile = INFERENCE_PROFILE_PREFIX.exec(model);
    if (profile) {
      exact.push(`arn:${env.partition}:bedrock:${env.region}:${env.account}:inference-profile/${model}`);
      anyRegion.push(`arn:${env.partition}:bedrock:*::foundation-model/${model.slice(profile[0].length)}`);
      continue;
    }
    exact.push(`arn:${env.partition}:bedrock:${env.region}::foundation-model/${model}`);
  }
  return { exact, anyRegion };
}
