/**
 * `stepthread start <workflowId|stateMachineArn> [--input JSON|@file] [--name <executionName>]`:
 * StartExecution on a deployed state machine. The execution name makes it idempotent: the same name
 * with the same input returns the execution already started instead of starting a second run.
 */
import { randomUUID } from 'node:crypto';
import {
  DescribeExecutionCommand,
  DescribeStateMachineCommand,
  ListStateMachinesCommand,
  type ListStateMachinesCommandOutput,
  StartExecutionCommand,
} from '@aws-sdk/client-sfn';
import type { Command } from 'commander';
import { StepthreadError } from '../../engine/errors.ts';
import type { Budget } from '../../engine/model/schema.ts';
import {
  createAwsClients,
  type ResourceNames,
  resolveAwsTarget,
  resolveResourceNames,
} from '../../functions/aws/clients.ts';
import { unqualifiedStateMachineArn } from '../../functions/aws/state-machine-arns.ts';
import { createThreadStore } from '../../functions/stores/thread-store.ts';
import { claimCheck, createValueStore, type ValueStore } from '../../functions/stores/value-store.ts';
import { BUDGET_OPTION_HELP, budgetOption } from '../budget-option.ts';
import { startCopyOnStack } from '../deployed/copy-start.ts';
import { startOnLiveAlias } from '../deployed/step-functions.ts';
import { stackNodeTables } from '../deployed/workflow-declarations.ts';
import { budgetGivenOnce, inputGivenOnce } from '../given-once.ts';
import { type CliIo, EXIT } from '../io.ts';
import {
  type DataDirOption,
  NO_CACHE_OPTION_HELP,
  printDeployedFailure,
  STACK_OPTION_HELP,
  stackCacheDir,
  withStores,
} from '../local-session.ts';
import { isMissingResource, namesAfterRedeploy, resolveStackNames } from '../stack-names.ts';
import { parseInput, reportInputRefused } from './run.ts';

/** The part of SFNClient the deployed-stack commands use; tests pass a stub recording commands. */
export interface SfnLike {
  send(command: object): Promise<unknown>;
}

export interface DeployedServices {
  readonly sfn?: SfnLike;
  /** Where a large input is uploaded (default: the stack's bucket, named by $STEPTHREAD_BUCKET). */
  readonly values?: Pick<ValueStore, 'putValues'>;
}

export interface StartOptions extends DataDirOption {
  input?: string;
  /** A copied thread to start from its node (`copy --stack`), instead of a new run. */
  thread?: string;
  /** This run's budget, as JSON (`--budget`). */
  budget?: string;
  name?: string;
  prefix?: string;
}

/** A client for the deployed stack the environment names; undefined on the embedded target. */
export function deployedSfn(io: CliIo, services: DeployedServices): SfnLike | undefined {
  if (services.sfn) return services.sfn;
  const target = resolveAwsTarget(io.env ?? process.env, {
    dynamoEndpoint: 'embedded',
    s3Endpoint: 'embedded',
  });
  if (target.kind === 'embedded') return undefined;
  return createAwsClients(target, resolveResourceNames(io.env ?? process.env)).sfn as unknown as SfnLike;
}

export const NO_DEPLOYED_STACK =
  'no deployed stack selected: set AWS_ENDPOINT_URL (LocalStack) or STEPTHREAD_TARGET=aws; to run on this machine use `stepthread run`';

export async function stateMachineArnOf(
  sfn: SfnLike,
  workflowOrArn: string,
  prefix: string,
): Promise<string | undefined> {
  if (workflowOrArn.startsWith('arn:')) return workflowOrArn;
  const name = `${prefix}-${workflowOrArn}`;
  let nextToken: string | undefined;
  do {
    const page = (await sfn.send(
      new ListStateMachinesCommand({ ...(nextToken ? { nextToken } : {}) }),
    )) as ListStateMachinesCommandOutput;
    const found = page.stateMachines?.find((machine) => machine.name === name);
    if (found?.stateMachineArn) return found.stateMachineArn;
    nextToken = page.nextToken;
  } while (nextToken);
  return undefined;
}

/** arn:…:stateMachine:<name>[:<version or alias>] → arn:…:execution:<name>:<executionName>. */
export function executionArnOf(stateMachineArn: string, executionName: string): string {
  return `${unqualifiedStateMachineArn(stateMachineArn).replace(':stateMachine:', ':execution:')}:${executionName}`;
}

/**
 * The input as StartExecution takes it: over 8 KB, stored in the bucket of the stack the environment
 * (or --stack) names, by reference. With the bucket's name from a stack's cached outputs and that
 * bucket gone (the stack was deployed again), the outputs are read again and the upload runs once more.
 */
async function claimCheckedInput(
  io: CliIo,
  services: DeployedServices,
  options: StartOptions,
  value: unknown,
): Promise<unknown> {
  if (services.values) return claimCheck({ read: async () => new Map(), ...services.values }, value);
  const env = io.env ?? process.env;
  const target = resolveAwsTarget(env, { dynamoEndpoint: 'embedded', s3Endpoint: 'embedded' });
  const cacheDir = stackCacheDir(options, io);
  const resolveOptions = {
    ...(options.stack ? { stack: options.stack } : {}),
    ...(cacheDir ? { cacheDir } : {}),
  };
  const upload = (names: ResourceNames) =>
    claimCheck(
      createValueStore(createAwsClients(target, names), {
        readMessage: () => Promise.reject(new Error('start reads no messages')),
      }),
      value,
    );
  const resolved = await resolveStackNames(env, target, resolveOptions);
  try {
    return await upload(resolved.names);
  } catch (error) {
    const fresh =
      resolved.cached && isMissingResource(error)
        ? await namesAfterRedeploy(env, target, resolveOptions, resolved.names)
        : undefined;
    if (!fresh) throw error;
    return upload(fresh);
  }
}

/** Whether the state machine is EXPRESS (best effort: false when it cannot be described). */
async function isExpress(sfn: SfnLike, stateMachineArn: string): Promise<boolean> {
  try {
    const described = (await sfn.send(new DescribeStateMachineCommand({ stateMachineArn }))) as {
      type?: string;
    } | null;
    return described?.type === 'EXPRESS';
  } catch {
    return false;
  }
}

export async function runStart(
  workflowOrArn: string,
  options: StartOptions,
  io: CliIo,
  services: DeployedServices = {},
): Promise<number> {
  if (options.thread !== undefined)
    return runStartThread(workflowOrArn, options.thread, options, io, services);
  const input = await parseInput(options.input, io);
  if (!input.ok) return reportInputRefused(input, io);
  const budget = budgetOption(options.budget, io);
  if (!budget.ok) return budget.exitCode;
  const sfn = deployedSfn(io, services);
  if (sfn === undefined) {
    io.stderr(`stepthread: ${NO_DEPLOYED_STACK}\n`);
    return EXIT.usage;
  }
  const prefix = options.prefix ?? (io.env ?? process.env).STEPTHREAD_NAME_PREFIX ?? 'stepthread';
  try {
    const stateMachineArn = await stateMachineArnOf(sfn, workflowOrArn, prefix);
    if (stateMachineArn === undefined) {
      io.stderr(
        `stepthread: no state machine named ${prefix}-${workflowOrArn} (deploy the workflow, or pass its ARN)\n`,
      );
      return EXIT.invalid;
    }
    const name = options.name ?? randomUUID();
    // Over 8 KB the input goes to the stack's bucket and the execution starts with a reference to it
    // (content-addressed: the same input gives the same reference, so a repeated start still matches).
    const checked = await claimCheckedInput(io, services, options, input.value);
    // START reads the run's budget from the execution input, beside the input itself.
    const body = JSON.stringify({
      input: checked,
      ...(budget.value === undefined ? {} : { budget: budget.value }),
    });
    try {
      // A workflow id starts on its `live` alias (pinned to the latest deploy's version); an ARN as given.
      const started = workflowOrArn.startsWith('arn:')
        ? ((await sfn.send(new StartExecutionCommand({ stateMachineArn, name, input: body }))) as {
            executionArn?: string;
          })
        : await startOnLiveAlias(sfn, { stateMachineArn, name, input: body });
      io.stdout(`${started.executionArn ?? executionArnOf(stateMachineArn, name)}\n`);
      if (await isExpress(sfn, stateMachineArn)) {
        io.stderr(
          'note: this is an EXPRESS state machine: StartExecution does not deduplicate by name there, so starting the same name again starts another run\n',
        );
      }
      return EXIT.ok;
    } catch (error) {
      if (!(error instanceof Error && error.name === 'ExecutionAlreadyExists')) throw error;
      // Same name again: the run exists already. Only a different input is a mistake.
      const executionArn = executionArnOf(stateMachineArn, name);
      const existing = (await sfn.send(new DescribeExecutionCommand({ executionArn }))) as {
        input?: string;
        status?: string;
      };
      if (existing.input !== undefined && JSON.stringify(JSON.parse(existing.input)) !== body) {
        io.stderr(`stepthread: execution ${name} already exists with a different input: ${executionArn}\n`);
        return EXIT.invalid;
      }
      io.stderr(
        `execution ${name} was already started (${existing.status ?? 'status unknown'}); not starting another\n`,
      );
      io.stdout(`${executionArn}\n`);
      return EXIT.ok;
    }
  } catch (error) {
    // Coded (the stack's outputs, the endpoint, the region): the code and what to do, on its own line.
    printDeployedFailure(io, `cannot start ${workflowOrArn}`, error, io.env ?? process.env);
    return EXIT.invalid;
  }
}

/**
 * `start <workflow> --thread <copyId>`: starts a copied thread (`copy --stack`) from its node on the
 * workflow's deployed state machine, on its `live` alias (cli/deployed/copy-start.ts); prints the
 * execution ARN. The copy keeps its own input: `--input` does not go with it.
 */
async function runStartThread(
  workflowOrArn: string,
  threadId: string,
  options: StartOptions,
  io: CliIo,
  services: DeployedServices,
): Promise<number> {
  if (options.input !== undefined) {
    io.stderr(
      'stepthread: USAGE_ERROR: --input and --thread do not go together (a thread keeps its own input)\n',
    );
    return EXIT.usage;
  }
  const budget = budgetOption(options.budget, io);
  if (!budget.ok) return budget.exitCode;
  const prefix = options.prefix ?? (io.env ?? process.env).STEPTHREAD_NAME_PREFIX ?? 'stepthread';
  return withStores(
    { ...options, mustExist: true },
    io,
    () => `cannot start thread ${threadId}`,
    async (session) => {
      const sfn = services.sfn ?? (session.clients.sfn as unknown as SfnLike);
      const { thread } = await createThreadStore(session.clients).getThread(threadId);
      if (!workflowOrArn.startsWith('arn:') && thread.workflowId !== workflowOrArn) {
        throw new StepthreadError(
          'INVALID_TASK_INPUT',
          `thread ${threadId} belongs to workflow ${thread.workflowId}, not ${workflowOrArn}`,
        );
      }
      const stateMachineArn = await stateMachineArnOf(sfn, workflowOrArn, prefix);
      if (stateMachineArn === undefined) {
        io.stderr(
          `stepthread: no state machine named ${prefix}-${workflowOrArn} (deploy the workflow, or pass its ARN)\n`,
        );
        return EXIT.invalid;
      }
      const started = await startCopyOnStack(sfn, {
        stateMachineArn,
        thread,
        nodeTables: stackNodeTables(session.clients),
        name: options.name ?? randomUUID(),
        ...(budget.value === undefined ? {} : { budget: budget.value as Budget }),
      });
      io.stderr(`starting thread ${thread.id} from node ${started.input.resume.node.id}\n`);
      io.stdout(`${started.executionArn}\n`);
      return EXIT.ok;
    },
  );
}

export function registerStart(
  program: Command,
  io: CliIo,
  setExit: (code: number) => void,
  services: DeployedServices = {},
): void {
  program
    .command('start')
    .description('start an execution of a deployed workflow (AWS or LocalStack) and print its ARN')
    .argument('<workflow>', 'workflow id (state machine <prefix>-<id>) or state machine ARN')
    .option(
      '--input <json>',
      'the run input: a JSON object, or @file to read it from a file',
      inputGivenOnce('run'),
    )
    .option(
      '--thread <threadId>',
      'start a copied thread (stepthread copy --stack) from its node instead of a new run; it keeps its own input',
    )
    .option('--budget <json>', BUDGET_OPTION_HELP, budgetGivenOnce)
    .option(
      '--name <executionName>',
      'execution name; starting the same name again does not start a second run',
    )
    .option('--stack <name>', STACK_OPTION_HELP)
    .option('--no-cache', NO_CACHE_OPTION_HELP)
    .option(
      '--prefix <prefix>',
      'state machine name prefix (default: $STEPTHREAD_NAME_PREFIX or "stepthread")',
    )
    .action(async (workflow: string, options: StartOptions) => {
      setExit(await runStart(workflow, options, io, services));
    });
}
