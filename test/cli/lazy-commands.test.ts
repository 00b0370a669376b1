/**
 * `stepthread <command>` loads that command's modules only: validate and compile never load the AWS
 * SDK, the embedded services or the ASL interpreter, and a command using a data directory never loads
 * the services either (the directory's store server, its own process, does). A resolve hook records
 * every package the command imports, in a fresh process.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { startOtlpReceiver } from '../support/otlp-receiver.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const HEAVY = ['@aws-sdk/', 'dynalite', 's3rver', 'aws-local-stepfunctions', 'openai', 'quickjs-emscripten'];

const HOOK = `
export async function resolve(specifier, context, next) {
  if (!/^(node:|file:|data:|\\.|\\/)/.test(specifier)) process.stderr.write('PACKAGE ' + specifier + '\\n');
  return next(specifier, context);
}`;

/** This process's environment without OpenTelemetry's settings (a developer's own endpoint). */
function withoutTraceSettings(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('OTEL_')));
}

/** Packages the command imported (bare specifiers resolved), from a fresh process. */
async function packagesLoadedBy(args: string[], env: Record<string, string> = {}): Promise<string[]> {
  const script = [
    "import { register } from 'node:module';",
    `register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(HOOK)}));`,
    "await import('tsx/esm');",
    `const { main } = await import(${JSON.stringify(pathToFileURL(join(ROOT, 'cli', 'main.ts')).href)});`,
    'process.exitCode = await main(process.argv);',
  ].join('\n');
  const { stderr } = await promisify(execFile)(
    process.execPath,
    ['--input-type=module', '-e', script, 'stepthread', ...args],
    { cwd: ROOT, encoding: 'utf8', env: { ...withoutTraceSettings(), ...env } },
  );
  return [...new Set(stderr.split('\n').filter((line) => line.startsWith('PACKAGE ')))].map((line) =>
    line.slice('PACKAGE '.length),
  );
}

describe('lazy commands', () => {
  it.each([
    ['validate', ['validate', 'examples/route-loop.json']],
    ['compile', ['compile', 'examples/route-loop.json']],
  ])(
    '%s loads no AWS SDK, embedded service or interpreter',
    async (_name, args) => {
      const packages = await packagesLoadedBy(args);
      expect(packages).toContain('commander');
      expect(packages.filter((name) => HEAVY.some((heavy) => name.startsWith(heavy)))).toEqual([]);
    },
    60_000,
  );

  it('run, a client of the data directory, loads neither dynalite nor s3rver', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'stepthread-lazy-'));
    try {
      const packages = await packagesLoadedBy([
        'run',
        'examples/route-loop.json',
        '--data-dir',
        join(dir, 'data'),
        '--json',
      ]);
      expect(packages).toContain('aws-local-stepfunctions');
      expect(packages.filter((name) => name.startsWith('dynalite') || name.startsWith('s3rver'))).toEqual([]);
      // No trace endpoint set: nothing of OpenTelemetry.
      expect(packages.filter((name) => name.startsWith('@opentelemetry/'))).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('run with a trace endpoint set loads the OpenTelemetry SDK and exporter', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'stepthread-lazy-'));
    const receiver = await startOtlpReceiver();
    try {
      const packages = await packagesLoadedBy(
        ['run', 'examples/route-loop.json', '--data-dir', join(dir, 'data'), '--json'],
        { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url },
      );
      expect(packages).toEqual(
        expect.arrayContaining(['@opentelemetry/sdk-trace-base', '@opentelemetry/exporter-trace-otlp-proto']),
      );
      expect(receiver.spans.length).toBeGreaterThan(0);
    } finally {
      await receiver.close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
