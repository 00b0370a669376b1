/**
 * The CODE sandbox runs user code in a worker thread whose script must sit next to the handler bundle
 * (functions/sandbox/worker-location.ts). Handlers that run the sandbox get this NodejsFunction hook:
 * after esbuild writes index.mjs, functions/sandbox/build.ts writes sandbox-worker.mjs beside it.
 */
import type { ICommandHooks } from 'aws-cdk-lib/aws-lambda-nodejs';

/** The path inside single quotes, for bash (CDK runs hook commands with `bash -c`). */
function quoted(path: string): string {
  return `'${path.replaceAll("'", `'\\''`)}'`;
}

/** `verbose`: the build prints the worker's path; otherwise only its errors (stderr) show. */
export function sandboxWorkerHooks(verbose = false): ICommandHooks {
  return {
    beforeBundling: () => [],
    beforeInstall: () => [],
    // From the project root (the input dir), so npx finds the project's own tsx and esbuild.
    afterBundling: (inputDir, outputDir) => [
      `cd ${quoted(inputDir)} && npx --no-install tsx functions/sandbox/build.ts ${quoted(outputDir)}${verbose ? '' : ' >/dev/null'}`,
    ],
  };
}
