/**
 * The package as a user gets it: `npm pack` (which builds dist/ through `prepack`), the tarball installed
 * into an empty project with its dependencies from the registry, then `npx stepthread` runs a workflow
 * and a typed user CDK app importing `stepthread/infra` type-checks and synthesizes, with no source tree
 * and no lock file. Slow by nature (a registry install): one pack, one install, everything else on it.
 */
import { execFile } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliIo, processIo } from '../../cli/io.ts';
import { main } from '../../cli/main.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const TSC = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  peerDependencies: Record<string, string>;
};

let work: string;
let app: string;
let tarball: string;

/** The user's environment, minus what `npm test` sets for this repository's own scripts. */
const userEnv = Object.fromEntries(
  Object.entries(process.env).filter(([key]) => !key.startsWith('npm_') && key !== 'INIT_CWD'),
);

interface Ran {
  status: number;
  stdout: string;
  stderr: string;
}

/** Runs a command without blocking the test worker (vitest talks to it meanwhile). */
async function run(command: string, args: string[], cwd: string, env = userEnv): Promise<Ran> {
  try {
    const { stdout, stderr } = await promisify(execFile)(command, args, {
      cwd,
      env,
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    });
    return { status: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return {
      status: typeof failed.code === 'number' ? failed.code : 1,
      stdout: failed.stdout ?? '',
      stderr: failed.stderr ?? '',
    };
  }
}

async function npm(args: string[], cwd: string): Promise<string> {
  const result = await run('npm', args, cwd);
  if (result.status !== 0) throw new Error(`npm ${args.join(' ')} failed:\n${result.stderr}`);
  return result.stdout;
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'stepthread-package-'));
  const packed = JSON.parse(await npm(['pack', '--json', '--pack-destination', work], ROOT)) as {
    filename: string;
    files: { path: string }[];
  }[];
  tarball = join(work, packed[0]!.filename);
  writeFileSync(join(work, 'files.json'), JSON.stringify(packed[0]!.files.map((f) => f.path)));

  app = join(work, 'app');
  mkdirSync(join(app, 'workflows'), { recursive: true });
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  // The construct library's peers, at the versions the package asks for, as a CDK app has them.
  const peers = Object.entries(manifest.peerDependencies).map(([name, range]) => `${name}@${range}`);
  await npm(['install', '--no-audit', '--no-fund', '--prefer-offline', tarball, ...peers], app);
  writeFileSync(
    join(app, 'workflows', 'support-triage.json'),
    readFileSync(join(ROOT, 'examples', 'support-triage.json')),
  );
}, 600_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
}, 120_000);

describe('the packed package', () => {
  it('ships compiled JavaScript, prebuilt Lambda bundles and declarations, not sources, tests or CI', () => {
    const files = JSON.parse(readFileSync(join(work, 'files.json'), 'utf8')) as string[];
    expect(files).toContain('bin/stepthread.js');
    expect(files).toContain('dist/cli/main.js');
    expect(files).toContain('dist/infra/index.d.ts');
    expect(files).toContain('dist/lambda/variable/index.mjs');
    expect(files).toContain('dist/lambda/code/sandbox-worker.mjs');
    expect(files).toContain('dist/functions/sandbox/sandbox-worker.mjs');
    expect(files.filter((f) => /^(test|bench|\.ci|cli|engine\/asl|functions|infra)\//.test(f))).toEqual([]);
    expect(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
    // Nothing to compile TypeScript at run time.
    expect(existsSync(join(app, 'node_modules', 'tsx'))).toBe(false);
    expect(existsSync(join(app, 'node_modules', 'stepthread', 'package-lock.json'))).toBe(false);
  });

  it('lists every command in `stepthread --help` without loading them (the summary written at build)', async () => {
    const installed = await run('npx', ['--no-install', 'stepthread', '--help'], app);
    expect(installed.status).toBe(0);
    let fromSources = '';
    const io: CliIo = {
      ...processIo,
      stdout: (text) => {
        fromSources += text;
      },
    };
    expect(await main(['node', 'stepthread', '--help'], io)).toBe(0);
    expect(installed.stdout).toBe(fromSources);
  });

  it('runs a workflow with `npx stepthread run` (the CODE sandbox included)', async () => {
    const result = await run(
      'npx',
      [
        '--no-install',
        'stepthread',
        'run',
        'workflows/support-triage.json',
        '--json',
        '--input',
        '{"ticket": {"subject": "Charged twice this month", "customer": "Ada", "monthlyFee": 30}}',
        '--answers',
        '{"approve-credit": true}',
      ],
      app,
    );
    expect(result.stderr).not.toMatch(/Error:|tsx/);
    expect(result.status).toBe(0);
    const outcome = JSON.parse(result.stdout) as { status: string; output: unknown };
    expect(outcome.status).toBe('COMPLETED');
    expect(existsSync(join(app, '.stepthread'))).toBe(true);
  }, 120_000);

  it('type-checks and synthesizes the CDK app of docs/deploy.md, which imports stepthread/infra', async () => {
    // The documented snippet, verbatim: `cdk synth` sets CDK_OUTDIR, and the App then synthesizes on exit.
    const deployDoc = readFileSync(join(ROOT, 'docs', 'deploy.md'), 'utf8');
    const section = deployDoc.slice(deployDoc.indexOf('## In your own CDK app'));
    const snippet = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
    expect(snippet).toContain("from 'stepthread/infra'");
    writeFileSync(join(app, 'app.ts'), snippet!);
    // A deliberate type error proves the declarations are really checked (not `any`).
    writeFileSync(
      join(app, 'wrong.ts'),
      "import { StepthreadRuntime } from 'stepthread/infra';\nexport const n: number = StepthreadRuntime.name.length + new Date();\n",
    );
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          skipLibCheck: true,
          outDir: 'out',
          types: [],
        },
        files: ['app.ts'],
      }),
    );
    const typed = await run(process.execPath, [TSC, '-p', '.'], app);
    expect(typed.stdout).toBe('');
    expect(typed.status).toBe(0);
    writeFileSync(
      join(app, 'tsconfig.wrong.json'),
      JSON.stringify({ extends: './tsconfig.json', compilerOptions: { noEmit: true }, files: ['wrong.ts'] }),
    );
    const wrong = await run(process.execPath, [TSC, '-p', 'tsconfig.wrong.json'], app);
    expect(wrong.stdout).toMatch(/wrong\.ts\(2,\d+\): error TS2365/);

    const outdir = join(app, 'cdk.out');
    const synth = await run(process.execPath, ['out/app.js'], app, { ...userEnv, CDK_OUTDIR: outdir });
    expect(synth.stderr).toBe('');
    expect(synth.status).toBe(0);
    const template = JSON.parse(readFileSync(join(outdir, 'Agents.template.json'), 'utf8')) as {
      Resources: Record<string, { Type: string; Properties: Record<string, unknown> }>;
    };
    const functions = Object.values(template.Resources).filter((r) => r.Type === 'AWS::Lambda::Function');
    expect(functions.length).toBe(14);
    expect(functions.every((f) => f.Properties.Handler === 'index.handler')).toBe(true);
    expect(Object.values(template.Resources).some((r) => r.Type === 'AWS::StepFunctions::StateMachine')).toBe(
      true,
    );
    const assets = readdirSync(outdir).filter((name) => name.startsWith('asset.'));
    expect(assets.length).toBeGreaterThanOrEqual(14);
    for (const asset of assets) expect(existsSync(join(outdir, asset, 'index.mjs'))).toBe(true);
  }, 300_000);
});
