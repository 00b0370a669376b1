/**
 * How every handler is bundled. NodejsFunction (infra) and the bundle bench (bench/bundles.ts) both read
 * these settings, so the bench measures exactly what gets deployed.
 */
import { Architecture, Runtime } from 'aws-cdk-lib/aws-lambda';
import { type BundlingOptions, LogLevel, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';

/** The newest Node.js Lambda runtime this aws-cdk-lib knows; arm64 is cheaper per GB-second. */
export const LAMBDA_RUNTIME = Runtime.NODEJS_24_X;
export const LAMBDA_ARCHITECTURE = Architecture.ARM_64;

/** esbuild target matching the runtime, so no syntax is lowered needlessly. */
export const ESBUILD_TARGET = 'node24';

/** The Lambda Node.js runtime ships AWS SDK v3: bundling it again would only add megabytes and init time. */
export const EXTERNAL_MODULES = ['@aws-sdk/*'] as const;

/**
 * ESM output still meets CommonJS dependencies that call `require` (e.g. for Node built-ins); esbuild
 * turns those into a `__require` shim that needs a real `require` in scope.
 */
export const ESM_REQUIRE_BANNER =
  "import { createRequire as __stepthreadCreateRequire } from 'node:module';const require = __stepthreadCreateRequire(import.meta.url);";

/**
 * The MCP SDK imports `zod/v4`, our code `zod`: the same module, by two entry files. A bundle that is
 * not split wraps what a dynamic import reaches (the SDK, loaded on first use) in lazy initialisers,
 * and esbuild then misses initialising zod's classes re-exported through `zod`'s `export *` (the
 * bundle fails at load: "... is not a constructor"). One entry file for both avoids it.
 */
export const ESBUILD_ALIASES: Readonly<Record<string, string>> = { 'zod/v4': 'zod' };

/**
 * `verbose`: esbuild reports each bundle (its size, the time); otherwise only errors, so a synth or
 * deploy prints no page of build output per function (`-c stepthread:verboseBundling=true` or
 * STEPTHREAD_VERBOSE_BUNDLING=1 asks for it, infra/app.ts).
 */
export function lambdaBundling(verbose = false): BundlingOptions {
  return {
    logLevel: verbose ? LogLevel.INFO : LogLevel.ERROR,
    format: OutputFormat.ESM,
    target: ESBUILD_TARGET,
    minify: true,
    sourceMap: false,
    // Prefer ESM builds of dependencies: they tree-shake far better than their CommonJS builds.
    mainFields: ['module', 'main'],
    externalModules: [...EXTERNAL_MODULES],
    banner: ESM_REQUIRE_BANNER,
    esbuildArgs: Object.fromEntries(
      Object.entries(ESBUILD_ALIASES).map(([from, to]) => [`--alias:${from}`, to]),
    ),
    // No Docker here or in CI: bundle with the esbuild in node_modules.
    forceDockerBundling: false,
  };
}

/**
 * The same settings as esbuild build options, for bundles built outside CDK: the handlers the package
 * ships prebuilt (scripts/build.ts) and the bundle bench.
 */
export function handlerEsbuildOptions(entry: string, outfile: string) {
  return {
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node' as const,
    format: 'esm' as const,
    target: ESBUILD_TARGET,
    minify: true,
    sourcemap: false,
    mainFields: ['module', 'main'],
    external: [...EXTERNAL_MODULES],
    banner: { js: ESM_REQUIRE_BANNER },
    alias: { ...ESBUILD_ALIASES },
    logLevel: 'error' as const,
  };
}
