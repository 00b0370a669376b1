/**
 * Stands the synthesized stack up in moto: starts the Lambda bridge (lambda-bridge.ts) and moto
 * (moto_server.py), then creates what the template declares — the table, the buckets, the event bus and
 * its rules, each Lambda function (its synthesized bundle, its template environment) and each state
 * machine (the template's definition, its Fn::Sub resolved and any DefinitionSubstitutions applied, as
 * CloudFormation does) with the version the deploy publishes and its `live` alias.
 * Physical names are generated the way CloudFormation would (`<stack>-<logicalId>`), so nothing relies
 * on the defaults the CLI falls back to. Each function's role policy, resolved, goes to the bridge,
 * which checks every SDK call the function makes against it (moto enforces no IAM).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { CloudFormationClient, CreateStackCommand } from '@aws-sdk/client-cloudformation';
import { CreateTableCommand, DynamoDBClient, UpdateTimeToLiveCommand } from '@aws-sdk/client-dynamodb';
import { CreateEventBusCommand, EventBridgeClient, PutRuleCommand } from '@aws-sdk/client-eventbridge';
import { CreateFunctionCommand, LambdaClient, PublishVersionCommand } from '@aws-sdk/client-lambda';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { CreateStateMachineAliasCommand, CreateStateMachineCommand, SFNClient } from '@aws-sdk/client-sfn';
import { cfnResolver } from '../support/cfn-resolve.ts';
import type { PolicyStatement } from './iam.ts';
import type { CheckedRequest } from './sdk-calls.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
export const ACCOUNT = '123456789012';
export const REGION = 'us-east-1';

interface Resource {
  Type: string;
  Properties?: Record<string, unknown>;
  Metadata?: Record<string, unknown>;
}
export interface Template {
  Resources: Record<string, Resource>;
  Outputs?: Record<string, { Value: unknown }>;
}

export interface MotoStack {
  readonly endpoint: string;
  /** The environment a CLI or SDK client needs to reach moto (the CLI finds the stack with --stack). */
  readonly env: Record<string, string>;
  /** Stack outputs, resolved (TableName, BucketName, <Workflow>StateMachineArn, ...). */
  readonly outputs: Record<string, string>;
  /** State machine ARN by state machine name. */
  readonly stateMachines: Map<string, string>;
  /** Each function's role policy as deployed (resolved), by function name. */
  readonly roles: Map<string, { logicalId: string; roleLogicalId: string; statements: PolicyStatement[] }>;
  /** The operator managed policy's statements, resolved. */
  readonly operatorStatements: PolicyStatement[];
  /** Every authorisation the functions' SDK calls needed so far, checked against their roles. */
  calls(): Promise<(CheckedRequest & { count: number })[]>;
  /** Invocations under way now, by function name. */
  running(): Promise<Record<string, number>>;
  /** Fault injection in the bridge (see lambda-bridge.ts). */
  faults(mode: 'none' | 'fail-first' | 'crash-first', error?: string): Promise<{ injected: number }>;
  close(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => done(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

interface MapLike {
  Type?: string;
  ItemReader?: unknown;
  ResultWriter?: unknown;
  ItemProcessor?: MachineLike & { ProcessorConfig?: { ExecutionType?: string } };
  Branches?: MachineLike[];
}
interface MachineLike {
  States?: Record<string, MapLike>;
}

/**
 * A definition as moto 5.2.1 can stand it up, changed only where moto cannot run a Distributed Map as
 * deployed (docs/deploy.md lists what moto therefore cannot check):
 * - its ASL grammar takes only "STANDARD" for an ItemProcessor's ExecutionType and refuses the
 *   definition otherwise; it runs every item inside the parent execution either way;
 * - it evaluates a ResultWriter's Parameters against the items' results, not the Map's input, so the
 *   stack's `Bucket.$`/`Prefix.$` fail the Map; and it writes only a manifest. The JOIN never reads
 *   the results, so the ResultWriter is left out.
 */
export function asMotoRunsIt(definition: string): string {
  const parsed = JSON.parse(definition) as MachineLike;
  const visit = (machine: MachineLike | undefined): void => {
    for (const state of Object.values(machine?.States ?? {})) {
      for (const branch of state.Branches ?? []) visit(branch);
      if (state.Type !== 'Map') continue;
      visit(state.ItemProcessor);
      if (state.ItemReader === undefined) continue;
      delete state.ResultWriter;
      const config = state.ItemProcessor?.ProcessorConfig;
      if (config?.ExecutionType === 'EXPRESS') config.ExecutionType = 'STANDARD';
    }
  };
  visit(parsed);
  return JSON.stringify(parsed);
}

/** Spawns a process and waits for its "ready" line; stderr is kept for the error message. */
async function startProcess(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<ChildProcess> {
  const child = spawn(command, args, { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  await new Promise<void>((done, fail) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      if (line.startsWith('ready')) done();
    });
    child.once('exit', (code) => fail(new Error(`${command} ${args.join(' ')} exited (${code}): ${stderr}`)));
  });
  return child;
}

/** IAM's query API by hand: the project has no IAM client, and this is the one IAM call the suite makes. */
async function iamCreateRole(endpoint: string, name: string, trustPolicy: string): Promise<void> {
  const response = await fetch(endpoint, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      // moto routes by the credential scope of the signature; it does not verify the signature.
      authorization: `AWS4-HMAC-SHA256 Credential=test/20260101/${REGION}/iam/aws4_request, SignedHeaders=host, Signature=0`,
    },
    body: new URLSearchParams({
      Action: 'CreateRole',
      Version: '2010-05-08',
      RoleName: name,
      AssumeRolePolicyDocument: trustPolicy,
    }).toString(),
  });
  if (!response.ok) throw new Error(`CreateRole ${name}: ${response.status} ${await response.text()}`);
}

/** The statements of every policy attached to a role (its AWS::IAM::Policy resources and inline Policies). */
export function roleStatements(
  template: Template,
  roleLogicalId: string,
  resolve: (value: unknown) => unknown,
): PolicyStatement[] {
  const statementsOf = (document: unknown) =>
    ((resolve(document) as { Statement?: PolicyStatement | PolicyStatement[] }).Statement ?? []) as
      | PolicyStatement
      | PolicyStatement[];
  const all: PolicyStatement[] = [];
  const role = template.Resources[roleLogicalId];
  for (const inline of (role?.Properties?.Policies ?? []) as { PolicyDocument: unknown }[]) {
    all.push(...[statementsOf(inline.PolicyDocument)].flat());
  }
  for (const resource of Object.values(template.Resources)) {
    if (resource.Type !== 'AWS::IAM::Policy') continue;
    const roles = (resource.Properties?.Roles ?? []) as { Ref?: string }[];
    if (roles.some((ref) => ref.Ref === roleLogicalId)) {
      all.push(...[statementsOf(resource.Properties?.PolicyDocument)].flat());
    }
  }
  return all;
}

/** What CloudFormation does with DefinitionSubstitutions: each `${key}` in the definition is replaced. */
export function applySubstitutions(definition: string, substitutions: Record<string, string>): string {
  return definition.replace(/\$\{([^}]+)\}/g, (whole, key: string) => substitutions[key] ?? whole);
}

export async function startMotoStack(assemblyDir: string, stackName: string): Promise<MotoStack> {
  const template = JSON.parse(
    readFileSync(join(assemblyDir, `${stackName}.template.json`), 'utf8'),
  ) as Template;
  const [motoPort, bridgePort] = [await freePort(), await freePort()];
  const endpoint = `http://127.0.0.1:${motoPort}`;
  const clientEnv = {
    AWS_ENDPOINT_URL: endpoint,
    AWS_REGION: REGION,
    AWS_DEFAULT_REGION: REGION,
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
  };
  const bridge = await startProcess(
    join(ROOT, 'node_modules/.bin/tsx'),
    ['test/cloud/lambda-bridge.ts', String(bridgePort)],
    { ...process.env, ...clientEnv },
  );
  const moto = await startProcess(
    'python3',
    ['test/cloud/moto_server.py', String(motoPort), `http://127.0.0.1:${bridgePort}/invoke`],
    { ...process.env, ...clientEnv },
  );
  const bridgeCall = async (path: string, body?: unknown) => {
    const response = await fetch(`http://127.0.0.1:${bridgePort}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return (await response.json()) as Record<string, unknown>;
  };

  const config = { endpoint, region: REGION, credentials: { accessKeyId: 'test', secretAccessKey: 'test' } };
  const dynamo = new DynamoDBClient(config);
  const s3 = new S3Client({ ...config, forcePathStyle: true });
  const events = new EventBridgeClient(config);
  const lambda = new LambdaClient(config);
  const sfn = new SFNClient(config);

  const physical = new Map<string, { ref: string; arn?: string }>();
  const resolve = cfnResolver(physical, { account: ACCOUNT, region: REGION });
  const generated = (logicalId: string) => `${stackName}-${logicalId}`;
  const ofType = (type: string) =>
    Object.entries(template.Resources).filter(([, resource]) => resource.Type === type);
  const props = (resource: Resource) => resource.Properties ?? {};

  // Roles exist (moto's Lambda checks that its role does); moto enforces no policies, so none are attached.
  for (const [id, resource] of ofType('AWS::IAM::Role')) {
    const name = generated(id).slice(0, 64);
    await iamCreateRole(endpoint, name, JSON.stringify(props(resource).AssumeRolePolicyDocument ?? {}));
    physical.set(id, { ref: name, arn: `arn:aws:iam::${ACCOUNT}:role/${name}` });
  }
  for (const [id] of ofType('AWS::Logs::LogGroup')) {
    physical.set(id, {
      ref: generated(id),
      arn: `arn:aws:logs:${REGION}:${ACCOUNT}:log-group:${generated(id)}`,
    });
  }
  for (const [id, resource] of ofType('AWS::DynamoDB::Table')) {
    const p = props(resource);
    const name = generated(id);
    await dynamo.send(
      new CreateTableCommand({
        TableName: name,
        KeySchema: p.KeySchema as never,
        AttributeDefinitions: p.AttributeDefinitions as never,
        GlobalSecondaryIndexes: p.GlobalSecondaryIndexes as never,
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
    const ttl = p.TimeToLiveSpecification as { AttributeName: string; Enabled: boolean } | undefined;
    if (ttl)
      await dynamo.send(new UpdateTimeToLiveCommand({ TableName: name, TimeToLiveSpecification: ttl }));
    physical.set(id, { ref: name, arn: `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/${name}` });
  }
  for (const [id] of ofType('AWS::S3::Bucket')) {
    const name = generated(id).toLowerCase().slice(0, 63);
    await s3.send(new CreateBucketCommand({ Bucket: name }));
    physical.set(id, { ref: name, arn: `arn:aws:s3:::${name}` });
  }
  for (const [id, resource] of ofType('AWS::Events::EventBus')) {
    const name = String(resolve(props(resource).Name));
    const created = await events.send(new CreateEventBusCommand({ Name: name }));
    physical.set(id, { ref: name, ...(created.EventBusArn ? { arn: created.EventBusArn } : {}) });
  }
  const bundles: Record<string, { dir: string; statements: PolicyStatement[] }> = {};
  const roles: MotoStack['roles'] = new Map();
  for (const [id, resource] of ofType('AWS::Lambda::Function')) {
    const assetPath = resource.Metadata?.['aws:asset:path'];
    if (typeof assetPath !== 'string') throw new Error(`function ${id} has no bundled asset`);
    // CDK's BucketDeployment handler (Python) runs only during a deploy: stood in for below.
    if (!existsSync(join(assemblyDir, assetPath, 'index.mjs'))) continue;
    const p = resolve(props(resource)) as Record<string, unknown>;
    const name = generated(id).slice(0, 64);
    const created = await lambda.send(
      new CreateFunctionCommand({
        FunctionName: name,
        Runtime: p.Runtime as never,
        Handler: p.Handler as string,
        Role: p.Role as string,
        Timeout: p.Timeout as number,
        MemorySize: p.MemorySize as number,
        Environment: p.Environment as never,
        // moto stores the code without running it: the bridge runs the bundle from the assembly.
        Code: { ZipFile: readFileSync(join(assemblyDir, assetPath, 'index.mjs')) },
      }),
    );
    const roleLogicalId = ((resource.Properties?.Role as { 'Fn::GetAtt'?: [string, string] })?.[
      'Fn::GetAtt'
    ] ?? [])[0];
    if (!roleLogicalId) throw new Error(`function ${id} has no role of this template`);
    const statements = roleStatements(template, roleLogicalId, resolve);
    roles.set(name, { logicalId: id, roleLogicalId, statements });
    bundles[name] = { dir: join(assemblyDir, assetPath), statements };
    physical.set(id, { ref: name, ...(created.FunctionArn ? { arn: created.FunctionArn } : {}) });
  }
  await bridgeCall('/register', bundles);
  // What CDK's BucketDeployment does during a deploy (the node tables): each source asset's files are
  // copied under the destination prefix.
  for (const [, resource] of ofType('Custom::CDKBucketDeployment')) {
    const p = props(resource);
    const bucket = String(resolve(p.DestinationBucketName));
    const prefix = String(p.DestinationBucketKeyPrefix ?? '');
    for (const key of p.SourceObjectKeys as string[]) {
      const dir = join(assemblyDir, `asset.${key.replace(/\.zip$/, '')}`);
      for (const file of readdirSync(dir)) {
        await s3.send(
          new PutObjectCommand({
            Bucket: bucket,
            Key: `${prefix}${file}`,
            Body: readFileSync(join(dir, file)),
          }),
        );
      }
    }
  }
  // Each function's version of this deploy, which the definitions invoke (pinned runs).
  for (const [id, resource] of ofType('AWS::Lambda::Version')) {
    const functionName = String(resolve(props(resource).FunctionName));
    const published = await lambda.send(new PublishVersionCommand({ FunctionName: functionName }));
    if (!published.FunctionArn?.endsWith(`:${published.Version}`))
      throw new Error(`moto published no qualified version of ${functionName}`);
    physical.set(id, { ref: published.FunctionArn, arn: published.FunctionArn });
  }

  const stateMachines = new Map<string, string>();
  // The version each deploy publishes of a state machine (AWS::StepFunctions::StateMachineVersion):
  // published with it (moto has no PublishStateMachineVersion; CreateStateMachine's publish serves).
  const versionOf = new Map(
    ofType('AWS::StepFunctions::StateMachineVersion').map(([id, resource]) => [
      (props(resource).StateMachineArn as { Ref?: string }).Ref ?? '',
      id,
    ]),
  );
  for (const [id, resource] of ofType('AWS::StepFunctions::StateMachine')) {
    const p = props(resource);
    const name = String(resolve(p.StateMachineName ?? generated(id)));
    const substitutions = resolve(p.DefinitionSubstitutions ?? {}) as Record<string, string>;
    // A definition too large for its template is an S3 asset (DefinitionS3Location), staged in the
    // assembly as asset.<key>: CloudFormation reads it from there, then applies the substitutions.
    const location = p.DefinitionS3Location as { Key?: string } | undefined;
    const text =
      location?.Key !== undefined
        ? readFileSync(join(assemblyDir, `asset.${location.Key}`), 'utf8')
        : String(resolve(p.DefinitionString));
    const definition = asMotoRunsIt(applySubstitutions(text, substitutions));
    const version = versionOf.get(id);
    const created = await sfn.send(
      new CreateStateMachineCommand({
        name,
        definition,
        roleArn: String(resolve(p.RoleArn)),
        type: (p.StateMachineType as 'STANDARD' | 'EXPRESS' | undefined) ?? 'STANDARD',
        ...(version ? { publish: true } : {}),
      }),
    );
    stateMachines.set(name, created.stateMachineArn!);
    physical.set(id, { ref: created.stateMachineArn!, arn: created.stateMachineArn! });
    if (version) {
      if (!created.stateMachineVersionArn) throw new Error(`moto published no version of ${name}`);
      physical.set(version, { ref: created.stateMachineVersionArn, arn: created.stateMachineVersionArn });
    }
  }
  for (const [id, resource] of ofType('AWS::StepFunctions::StateMachineAlias')) {
    const p = resolve(props(resource)) as {
      Name: string;
      Description?: string;
      RoutingConfiguration: { StateMachineVersionArn: string; Weight: number }[];
    };
    const created = await sfn.send(
      new CreateStateMachineAliasCommand({
        name: p.Name,
        ...(p.Description ? { description: p.Description } : {}),
        routingConfiguration: p.RoutingConfiguration.map((route) => ({
          stateMachineVersionArn: route.StateMachineVersionArn,
          weight: route.Weight,
        })),
      }),
    );
    physical.set(id, { ref: created.stateMachineAliasArn!, arn: created.stateMachineAliasArn! });
  }
  for (const [id, resource] of ofType('AWS::Events::Rule')) {
    const p = props(resource);
    const eventBusName = p.EventBusName === undefined ? 'default' : String(resolve(p.EventBusName));
    const created = await events.send(
      new PutRuleCommand({
        Name: generated(id).slice(0, 64),
        EventBusName: eventBusName,
        EventPattern: JSON.stringify(resolve(p.EventPattern)),
      }),
    );
    physical.set(id, { ref: generated(id), ...(created.RuleArn ? { arn: created.RuleArn } : {}) });
  }

  const outputs: Record<string, string> = {};
  for (const [key, output] of Object.entries(template.Outputs ?? {})) {
    try {
      outputs[key] = String(resolve(output.Value));
    } catch {
      // Outputs of resources moto does not model (the operator's managed policy) are left out.
    }
  }
  // A stand-in stack with the same outputs, so `--stack <name>` resolves the table and bucket through
  // DescribeStacks as it would on AWS (moto cannot deploy the real template: no Lambda code upload).
  const cloudformation = new CloudFormationClient(config);
  await cloudformation.send(
    new CreateStackCommand({
      StackName: stackName,
      TemplateBody: JSON.stringify({
        Resources: { Placeholder: { Type: 'AWS::CloudFormation::WaitConditionHandle' } },
        Outputs: Object.fromEntries(Object.entries(outputs).map(([key, value]) => [key, { Value: value }])),
      }),
    }),
  );
  for (const client of [dynamo, s3, events, lambda, sfn, cloudformation]) client.destroy();
  const operatorPolicy = Object.values(template.Resources).find(
    (resource) => resource.Type === 'AWS::IAM::ManagedPolicy',
  );
  const operatorStatements = [
    (resolve(operatorPolicy?.Properties?.PolicyDocument) as { Statement?: PolicyStatement[] })?.Statement ??
      [],
  ].flat();

  return {
    endpoint,
    env: clientEnv,
    outputs,
    stateMachines,
    roles,
    operatorStatements,
    calls: async () => (await bridgeCall('/calls')) as unknown as (CheckedRequest & { count: number })[],
    running: async () => (await bridgeCall('/running')) as Record<string, number>,
    faults: async (mode, error) => (await bridgeCall('/faults', { mode, error })) as { injected: number },
    async close() {
      for (const child of [moto, bridge]) {
        child.stdin?.end();
        child.kill();
      }
    },
  };
}
