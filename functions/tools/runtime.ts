/**
 * The tool environment and secret source for where a handler runs, read from its environment
 * variables: STEPTHREAD_TARGET=aws (set on the deployed Lambdas) invokes ARNs and reads Secrets
 * Manager; otherwise the embedded runtime calls modules and reads secrets from the environment.
 */
import { createLambdaInvoker } from './lambda-invoker.ts';
import { envSecrets, type SecretsManagerLike, secretsManagerSecrets } from './secrets.ts';
import type { SecretResolver, ToolEnvironment } from './types.ts';

type Env = Readonly<Record<string, string | undefined>>;

export interface ToolRuntime {
  env: ToolEnvironment;
  secrets: SecretResolver;
}

/** Environment variable naming the workflow file's folder, for module tools in the local runtime. */
export const WORKFLOW_DIR_VARIABLE = 'STEPTHREAD_WORKFLOW_DIR';
/** Prefix of Secrets Manager secret ids on AWS: `secrets.CRM_TOKEN` reads `<prefix>CRM_TOKEN`. */
export const SECRET_PREFIX_VARIABLE = 'STEPTHREAD_SECRET_PREFIX';

/** Secrets Manager, loaded on the first secret read (like the Lambda client: most tools use none). */
function lazySecretsManager(endpoint: string | undefined): SecretsManagerLike {
  let client: Promise<SecretsManagerLike> | undefined;
  return {
    async send(command, options) {
      client ??= import('@aws-sdk/client-secrets-manager').then(
        ({ SecretsManagerClient }) => new SecretsManagerClient(endpoint ? { endpoint } : {}),
      );
      return (await client).send(command, options);
    },
  };
}

export function toolRuntimeFromEnv(env: Env, options: { workflowDir?: string } = {}): ToolRuntime {
  const endpoint = env.AWS_ENDPOINT_URL?.trim();
  // Created lazily by the invoker, so a run that calls no ARN never loads the Lambda SDK.
  const invokeLambda = createLambdaInvoker(endpoint ? { endpoint } : {});
  if (env.STEPTHREAD_TARGET === 'aws') {
    const client = lazySecretsManager(endpoint);
    return {
      env: { target: 'aws', invokeLambda },
      secrets: secretsManagerSecrets(client, { prefix: env[SECRET_PREFIX_VARIABLE] ?? '' }),
    };
  }
  const workflowDir = options.workflowDir ?? env[WORKFLOW_DIR_VARIABLE];
  return {
    env: { target: 'local', invokeLambda, ...(workflowDir ? { workflowDir } : {}) },
    secrets: envSecrets(env),
  };
}
