/**
 * What the compiled CLI's bundle leaves out of aws-local-stepfunctions (scripts/build.ts): the three
 * packages it imports at its top for features state-machine.ts never uses, each replaced there by a
 * stub that throws if called.
 *
 * - asl-validator (and ajv under it): definition validation, which the runtime turns off
 *   (`noValidate`: the definition is the compiler's own output, checked by the ASL tests);
 * - @aws-sdk/client-lambda and @aws-sdk/credential-providers: invoking a Task's Lambda for real,
 *   where every Task state runs a local handler instead (runtime.ts maps each one by name).
 *
 * A `stepthread run` loaded, parsed and initialised them (about 220 KB of bundle) at every start.
 * Only imports made by aws-local-stepfunctions are replaced: our own modules that load the Lambda
 * client (functions/tools/lambda-invoker.ts) or ajv (functions/tools/arguments.ts) get the real ones.
 */
import type { Plugin } from 'esbuild';

const STUBS: Readonly<Record<string, string>> = {
  'asl-validator': 'export default function aslValidator() { unused("asl-validator"); }',
  '@aws-sdk/client-lambda':
    'export class LambdaClient { constructor() { unused("@aws-sdk/client-lambda"); } }\nexport class InvokeCommand {}',
  '@aws-sdk/credential-providers':
    'export function fromCognitoIdentityPool() { unused("@aws-sdk/credential-providers"); }',
};

const UNUSED = `function unused(name) {
  throw new Error(\`aws-local-stepfunctions called \${name}, which the stepthread CLI bundle leaves out (functions/local/state-machine-build.ts)\`);
}`;

/** esbuild plugin: aws-local-stepfunctions' imports of the packages above resolve to stubs. */
export function localRunnerStubs(): Plugin {
  const namespace = 'local-runner-stub';
  const filter = new RegExp(`^(${Object.keys(STUBS).join('|').replace(/[/.-]/g, '\\$&')})$`);
  return {
    name: namespace,
    setup(build) {
      build.onResolve({ filter }, (args) =>
        /[\\/]aws-local-stepfunctions[\\/]/.test(args.importer) ? { path: args.path, namespace } : undefined,
      );
      build.onLoad({ filter: /.*/, namespace }, (args) => ({
        contents: `${UNUSED}\n${STUBS[args.path]}\n`,
        loader: 'js',
      }));
    },
  };
}
