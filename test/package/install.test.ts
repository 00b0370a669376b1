/**
 * The package as a user gets it: `npm pack` (which builds dist/ through `prepack`), the tarball installed
 * into an empty project with its dependencies from the registry, then the installed `stepthread` works
 * exactly as the checkout does: every example (with the README's inputs; they ship in the package, with
 * refund-approval's MCP server) and a workflow with each tool kind (`code` with parameters, `http` to a
 * server on loopback, `module`) give the same `--json` (status, output, conversation) as `main` from
 * the sources; `stepthread dev` serves and runs; `--help`
 * and `--version` print the same; and a typed user CDK app importing `stepthread/infra` type-checks and
 * synthesizes with the outputs `--stack` reads, with no source tree and no lock file. Slow by nature
 * (a registry install): one pack, one install, everything else on it.
 */
import { execFile, spawn } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from 'node:fs';
import { rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliResult, runCli } from '../support/cli.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const TSC = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  version: string;
  peerDependencies: Record<string, string>;
};

let work: string;
let app: string;
let tarball: string;
let installLog: string;
let checkoutData: string;
let orders: Server;

/** The user's environment, minus what `npm test` sets for this repository's own scripts. */
const userEnv = Object.fromEntries(
  Object.entries(process.env).filter(
    ([key]) => !key.startsWith('npm_') && key !== 'INIT_CWD' && !/^(AWS_ENDPOINT_URL|STEPTHREAD_)/.test(key),
  ),
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

async function npm(args: string[], cwd: string): Promise<Ran> {
  const result = await run('npm', args, cwd);
  if (result.status !== 0) throw new Error(`npm ${args.join(' ')} failed:\n${result.stderr}`);
  return result;
}

/** `stepthread …args` as the installed package runs it in the user's project. */
const installed = (args: string[]) => run('npx', ['--no-install', 'stepthread', ...args], app);

/** The same command from the sources (`main` in this process), over a data directory of its own. */
const fromSources = (args: string[]): Promise<CliResult> =>
  runCli(args, { env: { ...userEnv, STEPTHREAD_DATA_DIR: checkoutData } });

/** A local run's `--json` as compared: what does not depend on the run's ids. */
function outcomeOf(stdout: string): { status: string; output: unknown; conversation: unknown } {
  const { status, output, conversation } = JSON.parse(stdout) as Record<string, unknown>;
  return { status: status as string, output, conversation };
}

/** Splits a shell command line into words, honouring single and double quotes (all the README uses). */
function shellWords(line: string): string[] {
  return [...line.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3]!);
}

/** The arguments the README, then docs/cli.md, run each example with (its first run shown), by file name. */
function readmeRunsOfExamples(): Map<string, string[]> {
  const docs = ['README.md', 'docs/cli.md'].map((path) => readFileSync(join(ROOT, path), 'utf8')).join('\n');
  const runs = new Map<string, string[]>();
  for (const [, args] of docs.matchAll(/^(?:\$ )?(?:npm run stepthread -- |npx stepthread )run (.*)$/gm)) {
    const [file, ...rest] = shellWords(args!.split(/\s+#/)[0]!);
    const name = /^examples\/([^/]+\.json)$/.exec(file!)?.[1];
    if (name && !runs.has(name))
      runs.set(
        name,
        rest.filter((word) => word !== '--json'),
      );
  }
  return runs;
}

const EXAMPLES = readdirSync(join(ROOT, 'examples')).filter((name) => name.endsWith('.json'));
const README_RUNS = readmeRunsOfExamples();

/** start → agent (an LLM calling each tool) → one TOOL node per tool kind → end. */
function toolsWorkflow(ordersUrl: string): unknown {
  const object = (properties: Record<string, unknown>, required: string[]) => ({
    type: 'object',
    properties,
    required,
  });
  const nodes = [
    { id: 'start', type: 'START' },
    {
      id: 'agent',
      type: 'LLM',
      config: {
        prompt: 'Look up {{input.name}}.',
        tools: ['tenure', 'order', 'greet'],
        maxToolCallsPerRequest: 3,
      },
    },
    { id: 'viaCode', type: 'TOOL', config: { toolName: 'tenure', arguments: { since: 2019 } } },
    { id: 'viaHttp', type: 'TOOL', config: { toolName: 'order', arguments: { id: 'A-17' } } },
    { id: 'viaModule', type: 'TOOL', config: { toolName: 'greet', arguments: { name: '{{input.name}}' } } },
    {
      id: 'end',
      type: 'END',
      config: {
        output: {
          agent: '{{nodes.agent}}',
          code: '{{nodes.viaCode}}',
          http: '{{nodes.viaHttp}}',
          module: '{{nodes.viaModule}}',
        },
      },
    },
  ];
  return {
    id: 'tools',
    version: 1,
    profiles: {
      default: {
        provider: 'scripted',
        byNode: {
          agent: [
            {
              content: 'Looking.',
              toolCalls: [
                { name: 'tenure', arguments: { since: 2019 } },
                { name: 'order', arguments: { id: 'A-17' } },
                { name: 'greet', arguments: { name: 'Ada' } },
              ],
            },
            'All three answered.',
          ],
        },
      },
    },
    tools: {
      tenure: {
        description: 'Years as a customer',
        parameters: object({ since: { type: 'integer' }, now: { type: 'integer', default: 2025 } }, [
          'since',
        ]),
        handler: { kind: 'code', code: 'return { years: input.now - input.since }' },
      },
      order: {
        description: 'Fetches an order',
        parameters: object({ id: { type: 'string' } }, ['id']),
        // The stand-in listens on loopback, which an http tool reaches only when it says so.
        handler: {
          kind: 'http',
          url: `${ordersUrl}/orders/{{args.id}}`,
          method: 'GET',
          allowPrivateNetwork: true,
        },
      },
      greet: {
        description: 'Greets someone',
        parameters: object({ name: { type: 'string' } }, ['name']),
        handler: 'module:tools.mjs#greet',
      },
    },
    nodes,
    edges: nodes.slice(1).map((node, i) => ({ from: nodes[i]!.id, to: node.id })),
  };
}

const TOOLS_INPUT = '{"name": "Ada"}';

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'stepthread-package-'));
  checkoutData = join(work, 'checkout-data');
  const packed = JSON.parse((await npm(['pack', '--json', '--pack-destination', work], ROOT)).stdout) as {
    filename: string;
    files: { path: string }[];
  }[];
  tarball = join(work, packed[0]!.filename);
  writeFileSync(join(work, 'files.json'), JSON.stringify(packed[0]!.files.map((f) => f.path)));

  app = join(work, 'app');
  mkdirSync(join(app, 'workflows'), { recursive: true });
  // classic-level (dynalite's LevelDB) loads its prebuilt binary: its install script is not needed,
  // and the project says so, as the README tells users to (npm 11 warns otherwise, npm 12 skips it).
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({ name: 'app', private: true, type: 'module', allowScripts: { 'classic-level': false } }),
  );
  // The construct library's peers, at the versions the package asks for, as a CDK app has them.
  const peers = Object.entries(manifest.peerDependencies).map(([name, range]) => `${name}@${range}`);
  const install = await npm(
    ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball, ...peers],
    app,
  );
  installLog = install.stdout + install.stderr;

  // The examples with what they start (refund-approval's MCP server, examples/mcp/), as a user copies them.
  cpSync(join(ROOT, 'examples'), join(app, 'workflows'), { recursive: true });
  orders = createServer((request, response) => {
    const id = /^\/orders\/([^/?]+)/.exec(request.url ?? '')?.[1];
    response.writeHead(id ? 200 : 404, { 'content-type': 'application/json' });
    response.end(JSON.stringify(id ? { id, items: 3 } : { message: 'no such order' }));
  });
  await new Promise<void>((resolve) => orders.listen(0, '127.0.0.1', resolve));
  const { port } = orders.address() as AddressInfo;
  writeFileSync(
    join(app, 'workflows', 'tools.json'),
    `${JSON.stringify(toolsWorkflow(`http://127.0.0.1:${port}`), null, 2)}\n`,
  );
  writeFileSync(
    join(app, 'workflows', 'tools.mjs'),
    'export function greet(args) {\n  return { greeting: "Hello, " + args.name };\n}\n',
  );
}, 600_000);

afterAll(async () => {
  await new Promise((resolve) => (orders ? orders.close(resolve) : resolve(undefined)));
  // Asynchronous: a blocking delete of the installed project starves vitest's own messages under load.
  if (work) await rm(work, { recursive: true, force: true, maxRetries: 3 });
}, 600_000);

describe('the packed package', () => {
  it('ships compiled JavaScript, prebuilt Lambda bundles and declarations, not sources, tests or CI', () => {
    const files = JSON.parse(readFileSync(join(work, 'files.json'), 'utf8')) as string[];
    expect(files).toContain('bin/stepthread.js');
    expect(files).toContain('dist/cli/main.js');
    expect(files).toContain('dist/infra/index.d.ts');
    expect(files).toContain('dist/lambda/variable/index.mjs');
    expect(files).toContain('dist/lambda/code/sandbox-worker.mjs');
    expect(files).toContain('dist/functions/sandbox/sandbox-worker.mjs');
    expect(files).toContain('engine/model/workflow.schema.json');
    expect(files).toContain('console/dist/index.html');
    // The examples, runnable where they are installed, with the MCP server refund-approval starts.
    for (const name of EXAMPLES) expect(files).toContain(`examples/${name}`);
    expect(files).toContain('examples/mcp/orders-server.mjs');
    expect(files.filter((f) => /^(test|bench|\.ci|cli|engine\/asl|functions|infra)\//.test(f))).toEqual([]);
    expect(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
    // Nothing to compile TypeScript at run time.
    expect(existsSync(join(app, 'node_modules', 'tsx'))).toBe(false);
    expect(existsSync(join(app, 'node_modules', 'stepthread', 'package-lock.json'))).toBe(false);
  });

  it('is publishable as it is: public, with provenance, and says where it comes from', () => {
    const published = JSON.parse(
      readFileSync(join(app, 'node_modules', 'stepthread', 'package.json'), 'utf8'),
    ) as Record<string, unknown>;
    expect(published.private).toBeUndefined();
    expect(published.publishConfig).toEqual({ access: 'public', provenance: true });
    expect(published.repository).toEqual({
      type: 'git',
      url: 'git+https://github.com/stepthread/stepthread.git',
    });
    expect(published.homepage).toBe('https://github.com/stepthread/stepthread#readme');
    expect(published.bugs).toEqual({ url: 'https://github.com/stepthread/stepthread/issues' });
    expect(published.keywords).toEqual(expect.arrayContaining(['llm', 'step-functions', 'aws-cdk']));
    expect(published.license).toBe('Apache-2.0');
  });

  it('installs without an install-script warning once the project denies classic-level’s script', () => {
    expect(installLog).not.toMatch(/install.scripts|allowScripts/i);
  });

  it('lists every command in `stepthread --help` without loading them (the summary written at build)', async () => {
    const help = await installed(['--help']);
    expect(help.status).toBe(0);
    const sources = await fromSources(['--help']);
    expect(sources.code).toBe(0);
    expect(help.stdout).toBe(sources.stdout);
    expect(help.stdout).toMatch(/^ {2}version +print the stepthread version$/m);
  });

  it.each([['--version'], ['-v'], ['version']])(
    'prints the package version with `stepthread %s`',
    async (flag) => {
      const printed = await installed([flag]);
      expect(printed).toMatchObject({ status: 0, stdout: `${manifest.version}\n` });
      expect((await fromSources([flag])).stdout).toBe(printed.stdout);
    },
  );

  it('knows every example’s README run', () => {
    expect(EXAMPLES.length).toBeGreaterThanOrEqual(5);
    expect(EXAMPLES.filter((name) => !README_RUNS.has(name))).toEqual([]);
  });

  it.each(EXAMPLES)(
    'runs %s with `npx stepthread run --json` as the checkout does (the README’s inputs)',
    async (name) => {
      const args = README_RUNS.get(name) ?? [];
      const packaged = await installed(['run', `workflows/${name}`, '--json', ...args]);
      expect(packaged.stderr).not.toMatch(/Error:|tsx/);
      expect(packaged.status, packaged.stdout).toBe(0);
      const checkout = await fromSources(['run', join(ROOT, 'examples', name), '--json', ...args]);
      expect(checkout.code).toBe(0);
      expect(outcomeOf(packaged.stdout)).toEqual(outcomeOf(checkout.stdout));
      expect(outcomeOf(packaged.stdout).status).toBe('COMPLETED');
      expect(JSON.stringify(outcomeOf(packaged.stdout).conversation)).not.toContain('Error');
    },
    300_000,
  );

  it('runs refund-approval where it is installed (node_modules/stepthread/examples), its MCP server started beside it', async () => {
    const args = ['--input', '{"customer": "Ada", "order": "A-17"}', '--answers', '{"agent": true}'];
    const packaged = await installed([
      'run',
      'node_modules/stepthread/examples/refund-approval.json',
      '--json',
      ...args,
    ]);
    expect(packaged.status, packaged.stderr).toBe(0);
    const outcome = outcomeOf(packaged.stdout);
    expect(outcome.status).toBe('COMPLETED');
    const lookups = (outcome.conversation as { role: string; name?: string; content: string }[]).filter(
      (message) => message.role === 'tool' && message.name === 'lookup_order',
    );
    expect(lookups.map((message) => JSON.parse(message.content))).toEqual([
      { order: 'A-17', customer: 'Ada', status: 'paid', charges: [80, 80], currency: 'EUR' },
    ]);
    const checkout = await fromSources([
      'run',
      join(ROOT, 'examples', 'refund-approval.json'),
      '--json',
      ...args,
    ]);
    expect(outcome).toEqual(outcomeOf(checkout.stdout));
  }, 300_000);

  it('prints the command that goes on from a question as it runs here (npx stepthread resume …), and it does', async () => {
    const ticket = '{"ticket": {"subject": "Charged twice this month", "customer": "Ada", "monthlyFee": 30}}';
    const stopped = await installed(['run', 'workflows/support-triage.json', '--input', ticket]);
    expect(stopped.status).toBe(1);
    const printed = /goes on with: (.+)$/m.exec(stopped.stderr)?.[1];
    expect(printed).toMatch(/^npx stepthread resume \S+ --answers '\{"approve-credit":true\}'$/);
    // Run as printed, by a shell in the project, as the user pastes it.
    const resumed = await run('sh', ['-c', `${printed} --json`], app);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(outcomeOf(resumed.stdout).status).toBe('COMPLETED');
  }, 300_000);

  it('runs code (with parameters), http (on loopback) and module tools, from an LLM and TOOL nodes, as the checkout does', async () => {
    const packaged = await installed(['run', 'workflows/tools.json', '--json', '--input', TOOLS_INPUT]);
    expect(packaged.stderr).not.toMatch(/Error:/);
    expect(packaged.status, packaged.stdout).toBe(0);
    const outcome = outcomeOf(packaged.stdout);
    expect(outcome.status).toBe('COMPLETED');
    expect(outcome.output).toEqual({
      agent: 'All three answered.',
      code: { years: 6 },
      http: { id: 'A-17', items: 3 },
      module: { greeting: 'Hello, Ada' },
    });
    const results = (outcome.conversation as { role: string; name?: string; content: string }[])
      .filter((message) => message.role === 'tool')
      .map((message) => [message.name, message.content]);
    expect(results).toEqual([
      ['tenure', '{"years":6}'],
      ['order', '{"id":"A-17","items":3}'],
      ['greet', '{"greeting":"Hello, Ada"}'],
    ]);
    const checkout = await fromSources([
      'run',
      join(app, 'workflows', 'tools.json'),
      '--json',
      '--input',
      TOOLS_INPUT,
    ]);
    expect(checkout.code).toBe(0);
    expect(outcome).toEqual(outcomeOf(checkout.stdout));
  }, 300_000);

  it('serves `stepthread dev`: the console, the workflows, and a run with every tool kind as the CLI ran it', async () => {
    const dev = spawn(
      join(app, 'node_modules', '.bin', 'stepthread'),
      ['dev', 'workflows', '--port', '0', '--data-dir', join(work, 'dev-data')],
      { cwd: app, env: userEnv, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    dev.stdout.setEncoding('utf8').on('data', (text: string) => {
      stdout += text;
    });
    dev.stderr.setEncoding('utf8').on('data', (text: string) => {
      stderr += text;
    });
    const exited = new Promise<number | null>((resolve) => dev.on('close', resolve));
    try {
      await expect.poll(() => /console at (http:\S+)/.exec(stdout)?.[1], { timeout: 60_000 }).toBeDefined();
      const url = /console at (http:\S+)/.exec(stdout)![1]!;
      const page = await fetch(url);
      expect(page.status).toBe(200);
      expect(await page.text()).toMatch(/<html/i);

      const workflows = (await (await fetch(`${url}/api/workflows`)).json()) as {
        id: string;
        valid: boolean;
      }[];
      expect(workflows.map((w) => w.id).sort()).toEqual(
        [...EXAMPLES.map((name) => name.replace(/\.json$/, '')), 'tools'].sort(),
      );
      expect(workflows.every((w) => w.valid)).toBe(true);

      const started = await fetch(`${url}/api/workflows/tools/runs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ input: JSON.parse(TOOLS_INPUT) }),
      });
      expect(started.status).toBe(202);
      const { executionId, threadId } = (await started.json()) as { executionId: string; threadId: string };
      const status = async () =>
        (
          (await (await fetch(`${url}/api/executions/${executionId}`)).json()) as {
            execution: { status: string };
          }
        ).execution.status;
      await expect.poll(status, { timeout: 60_000 }).not.toBe('RUNNING');
      const ended = (await (await fetch(`${url}/api/threads/${threadId}`)).json()) as { errors?: unknown };
      expect(await status(), JSON.stringify(ended.errors)).toBe('COMPLETED');
      const { messages } = (await (await fetch(`${url}/api/threads/${threadId}/conversation`)).json()) as {
        messages: unknown[];
      };
      const checkout = await fromSources([
        'run',
        join(app, 'workflows', 'tools.json'),
        '--json',
        '--input',
        TOOLS_INPUT,
      ]);
      expect(messages).toEqual(outcomeOf(checkout.stdout).conversation);
    } finally {
      dev.kill('SIGINT');
    }
    expect(await exited, stderr).toBe(0);
  }, 300_000);

  it('says what `$schema` reaches the installed schema from a copied example’s folder', async () => {
    const validated = await installed(['validate', 'workflows/route-loop.json']);
    expect(validated.status).toBe(0);
    const value = '../node_modules/stepthread/engine/model/workflow.schema.json';
    expect(validated.stderr).toContain(`stepthread's schema is "$schema": "${value}"`);
    expect(existsSync(join(app, 'workflows', value))).toBe(true);
  });

  it('type-checks and synthesizes the CDK app of docs/deploy.md, which imports stepthread/infra, with the outputs --stack reads', async () => {
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
    // The copied examples' refund-approval needs a stdio MCP server: the folder's deploy leaves it out, saying so.
    expect(synth.stderr).toMatch(
      /^stepthread: warning: refund-approval\.json \(workflow refund-approval\) is left out of the deploy: MCP_STDIO_NOT_DEPLOYABLE tool "lookup_order"[^\n]*\n$/,
    );
    expect(synth.status).toBe(0);
    const template = JSON.parse(readFileSync(join(outdir, 'Agents.template.json'), 'utf8')) as {
      Resources: Record<string, { Type: string; Properties: Record<string, unknown> }>;
      Outputs?: Record<string, { Value: unknown }>;
    };
    // The node functions; CDK's BucketDeployment handler (Python) stores the node tables besides.
    const functions = Object.values(template.Resources).filter(
      (r) => r.Type === 'AWS::Lambda::Function' && String(r.Properties.Runtime).startsWith('nodejs'),
    );
    expect(functions.length).toBe(14);
    expect(functions.every((f) => f.Properties.Handler === 'index.handler')).toBe(true);
    expect(Object.values(template.Resources).some((r) => r.Type === 'AWS::StepFunctions::StateMachine')).toBe(
      true,
    );
    // What `stepthread … --stack Agents` finds the table and bucket by (cli/stack-names.ts).
    const typeOfRef = (value: unknown) => template.Resources[(value as { Ref: string }).Ref]?.Type;
    expect(typeOfRef(template.Outputs?.TableName?.Value)).toBe('AWS::DynamoDB::Table');
    expect(typeOfRef(template.Outputs?.BucketName?.Value)).toBe('AWS::S3::Bucket');
    expect(typeOfRef(template.Outputs?.EventBusName?.Value)).toBe('AWS::Events::EventBus');
    expect(typeOfRef(template.Outputs?.OperatorPolicyArn?.Value)).toBe('AWS::IAM::ManagedPolicy');
    // Each node function's bundle (the node tables, CDK's Python handler and its layer are assets too).
    const assets = functions.map(
      (f) => `asset.${String((f.Properties.Code as { S3Key?: string }).S3Key).replace(/\.zip$/, '')}`,
    );
    expect(new Set(assets).size).toBe(14);
    for (const asset of assets) expect(existsSync(join(outdir, asset, 'index.mjs')), asset).toBe(true);
  }, 300_000);
});
